#!/usr/bin/env bash
# Run every test: install, then pytest (which also runs mypy --strict and the golden checks).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
. scripts/python.sh   # the interpreter install.sh installed into
exec "$PY" -m pytest -q "$@"

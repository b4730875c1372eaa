#!/usr/bin/env bash
# Run every test: install, then pytest (which also runs mypy --strict and the golden checks).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
PY="${PYTHON:-python3}"
exec "$PY" -m pytest -q "$@"

#!/usr/bin/env bash
# Run every test: install, then pytest (which also runs mypy --strict and the golden checks).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
. scripts/python.sh   # the interpreter install.sh installed into
# Two workers (PYTEST_WORKERS=N to change; 0 for one process), a file per worker: a test
# waits on its servers and subprocesses part of the time, so two workers use both cores.
# Each worker starts its own servers and tiny models.
exec "$PY" -m pytest -q -n "${PYTEST_WORKERS:-2}" --dist loadfile "$@"

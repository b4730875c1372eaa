#!/usr/bin/env bash
# The fast tier's runtime tests (transport included) against the oldest versions orsgen
# declares: constraints-floor.txt, pyproject's lower bounds, installed into a virtualenv of
# their own (.venv-floor, or FLOOR_VENV=DIR). .ci/run runs it after scripts/test.sh.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/python.sh   # the main interpreter: the floor virtualenv is made from it
venv="${FLOOR_VENV:-$PWD/.venv-floor}"
[ -x "$venv/bin/python" ] || "$PY" -m venv "$venv"
PYTHON="$venv/bin/python" CONSTRAINTS=constraints-floor.txt EXTRAS=train,vision,test \
    bash scripts/install.sh
echo "== the floor: $("$venv/bin/python" -m pip list 2>/dev/null | awk '$1 ~ /^(openreward|trl|torch)$/ { printf "%s %s  ", $1, $2 }')"
exec "$venv/bin/python" -m pytest -q -n "${PYTEST_WORKERS:-2}" --dist loadfile -m "not slow" tests/test_runtime_*.py "$@"

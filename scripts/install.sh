#!/usr/bin/env bash
# Install orsgen with everything the demo and the tests need, into the project's .venv
# (created on first use), the active virtualenv, or PYTHON=... (see scripts/python.sh).
# torch is pinned to the CPU build first: any looser requirement pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/python.sh
echo "== installing orsgen[dev] into $("$PY" -c 'import sys; print(sys.prefix)')"
# (This machine's pip config lists local indexes that may be absent; drop only that noise.)
quiet() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
quiet "$PY" -m pip install -q -c constraints.txt "torch==2.13.0"
quiet "$PY" -m pip install -q -c constraints.txt -e ".[dev]"

# Sourced by the scripts: sets PY to the interpreter orsgen is installed into and run with.
#   PYTHON=/path/to/python   use that interpreter as it is (your venv, conda env, ...);
#   an active virtualenv     ($VIRTUAL_ENV) is used as it is;
#   otherwise                the project's own .venv, created on first use.
# Never the system or pyenv interpreter itself: a system Python refuses installs
# (PEP 668, "externally-managed-environment"), and a pyenv Python would get torch and trl
# installed globally.
if [ -n "${PYTHON:-}" ]; then
    PY="$PYTHON"
elif [ -n "${VIRTUAL_ENV:-}" ]; then
    PY="$VIRTUAL_ENV/bin/python"
else
    PY="$PWD/.venv/bin/python"
    if [ ! -x "$PY" ]; then
        base="$(command -v python3.11 || command -v python3 || true)"
        if [ -z "$base" ]; then
            echo "orsgen scripts: no python3 on PATH; install Python 3.11+ or pass PYTHON=/path/to/python" >&2
            exit 2
        fi
        if ! "$base" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
            echo "orsgen scripts: $base is Python $("$base" -c 'import platform; print(platform.python_version())'), orsgen needs 3.11+;" \
                 "pass PYTHON=/path/to/python3.11 (an interpreter inside a virtualenv)" >&2
            exit 2
        fi
        echo "== creating the project virtualenv .venv with $base"
        if ! "$base" -m venv "$PWD/.venv"; then
            rm -rf "$PWD/.venv"
            echo "orsgen scripts: '$base -m venv .venv' failed (on Debian/Ubuntu: apt install python3-venv);" \
                 "or pass PYTHON=/path/to/python of a virtualenv you made" >&2
            exit 2
        fi
    fi
fi
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "orsgen scripts: '$PY' is not a Python 3.11+ interpreter that runs;" \
         "pass PYTHON=/path/to/python of a Python 3.11+ virtualenv" >&2
    exit 2
fi
export PY

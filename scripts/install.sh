#!/usr/bin/env bash
# Install orsgen with everything the demo and the tests need, into the project's .venv
# (created on first use), the active virtualenv, or PYTHON=... (see scripts/python.sh).
# torch is pinned to the CPU build first: any looser requirement pulls a multi-GB CUDA build.
# CONSTRAINTS=FILE (default constraints.txt) and EXTRAS=LIST (default dev) are for
# scripts/test_floor.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/python.sh
CONSTRAINTS="${CONSTRAINTS:-constraints.txt}"
EXTRAS="${EXTRAS:-dev}"
echo "== installing orsgen[$EXTRAS] into $("$PY" -c 'import sys; print(sys.prefix)')"
# (This machine's pip config lists local indexes that may be absent; drop only that noise.)
quiet() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
# pip's own lines, one per package it fetches or installs; "already satisfied" is left out.
progress() { awk '/^(Collecting|Installing collected|Successfully installed)/ { print "   " $0; fflush() }'; }
started=$SECONDS
torch="torch==$(sed -n 's/^torch==//p' "$CONSTRAINTS")"
echo "== 1/2 $torch (CPU build; a first install downloads about 200 MB)"
quiet "$PY" -m pip install --progress-bar off -c "$CONSTRAINTS" "$torch" | progress
echo "== 2/2 orsgen, editable, with trl, transformers, datasets, mypy, pytest, ... (about a minute)"
# editable_mode=strict: a .pth path entry to a tree of links to orsgen's files, which mypy
# and pyright follow from a user's project. The default (an import hook) is invisible to
# them: "Cannot find implementation or library stub for module named 'orsgen.runtime...'".
# A module added to orsgen/ later needs this install run again.
quiet "$PY" -m pip install --progress-bar off -c "$CONSTRAINTS" \
    --config-settings editable_mode=strict -e ".[$EXTRAS]" | progress
# The browser tests of `orsgen view` drive Debian's chromium through Playwright (never
# `playwright install`, which downloads its own build). Installed when missing, as root
# with apt; otherwise those tests skip and say why.
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "== chromium for the viewer's browser tests (apt-get install -y chromium)"
        { apt-get install -y chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y chromium >/dev/null; }; } || echo "   could not install chromium: the browser tests will skip"
    else
        echo "== no chromium: the viewer's browser tests will skip (as root: apt-get install -y chromium)"
    fi
fi
echo "== installed in $((SECONDS - started)) s"

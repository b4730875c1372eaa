#!/usr/bin/env bash
# The main job on the bundled example environment, from a fresh clone, one line per step:
# install, snapshot + generate the adapter package, prove it is current and type-clean, then
# run the whole training loop on CPU with a tiny model (scripts/demo_loop.sh): evaluate the
# warmed-up model on the train split at temperature 1.0, export its passing rollouts with
# `orsgen sft`, fine-tune on them (examples/sft.py), train with GRPO (examples/grpo.py, the
# evaluation as the curriculum's prior), evaluate before and after on the held-out test
# split (and the train split), and compare. Everything goes to runs/demo/ (each step's full
# output in runs/demo/logs/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
. scripts/python.sh   # the interpreter install.sh installed into
export OPENREWARD_DISABLE_UPDATE_CHECK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
LOGS=$(mktemp -d)   # moved into runs/demo/logs/ at the end (demo_loop.sh clears runs/demo)
. scripts/step.sh

step generate "" "$PY" -m orsgen examples/echo_env.py -o generated/echo
step check "" "$PY" -m orsgen check generated/echo
step mypy "" "$PY" -m mypy --strict generated
# --pythonpath: basedpyright otherwise resolves imports with the python on PATH (or ./.venv),
# not PYTHON=..., and fails on every import of orsgen, pydantic and datasets.
step basedpyright "" "$PY" -m basedpyright --pythonpath "$PY" generated
bash scripts/demo_loop.sh runs/demo
mv "$LOGS"/*.log runs/demo/logs/ && rmdir "$LOGS"

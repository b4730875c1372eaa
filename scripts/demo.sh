#!/usr/bin/env bash
# The main job on the bundled example environment, from a fresh clone:
# install, snapshot + generate the adapter package, prove it is current and type-clean,
# then train a tiny model with GRPOTrainer on CPU through the generated package, long enough
# to watch it learn: one line per step, the table in runs/demo/steps.csv, its plot in
# runs/demo/reward.png, what the trainer itself printed in runs/demo/train.log, and the
# per-task table in runs/demo/ors_tasks.csv (plotted to runs/demo/tasks.png). Last, evaluate
# the warmed-up and the trained model through `transformers serve` with `orsgen eval`, on
# the held-out test split (and on the train tasks), and compare: runs/demo/eval/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
. scripts/python.sh   # the interpreter install.sh installed into
export OPENREWARD_DISABLE_UPDATE_CHECK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1

echo "== orsgen examples/echo_env.py -o generated/echo"
"$PY" -m orsgen examples/echo_env.py -o generated/echo
echo "== orsgen check generated/echo"
"$PY" -m orsgen check generated/echo
echo "== mypy --strict generated"
"$PY" -m mypy --strict generated
echo "== basedpyright generated (strict mode, the pyright most editors run)"
# --pythonpath: basedpyright otherwise resolves imports with the python on PATH (or ./.venv),
# not PYTHON=..., and fails on every import of orsgen, pydantic and datasets.
"$PY" -m basedpyright --pythonpath "$PY" generated
echo "== GRPOTrainer on CPU with the generated package"
# The tiny model is warmed up to echo the right word in 1 of 3 tries and a wrong one in the
# others, so a GRPO group of 4 rollouts of one task differs in reward: the gradient is not
# zero, and the reward rises as the model learns which word scores.
"$PY" examples/train_echo.py --steps 30 --right-share 0.33 --learning-rate 5e-4 \
    --group-size 4 --batch-size 16 --output-dir runs/demo
echo "== orsgen eval: the warmed-up and the trained model, served by transformers serve"
# The test split's tasks are held out (words the model never trained on); the train split
# shows what training did on the tasks it saw. A run directory is never overwritten
# (orsgen eval refuses one that holds a run): this demo's own are cleared first.
rm -rf runs/demo/eval
"$PY" examples/eval_demo.py --before runs/demo/model-before --after runs/demo/model-after \
    --split test --split train -n 8 --out runs/demo/eval --no-compare
for split in test train; do
    echo "== orsgen eval --compare runs/demo/eval/$split/before runs/demo/eval/$split/after"
    "$PY" -m orsgen eval --compare "runs/demo/eval/$split/before" "runs/demo/eval/$split/after"
done

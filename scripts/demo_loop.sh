#!/usr/bin/env bash
# The training loop on the echo environment, one line per step (scripts/demo.sh runs it
# after generating generated/echo; tests/test_e2e_demo_figures.py runs it too):
#
#   bash scripts/demo_loop.sh [OUT]     (default OUT: runs/demo; cleared first)
#
#  1. warm up the tiny model to echo the right word in 1 of 3 tries (OUT/model-before);
#  2. evaluate it on the train split at temperature 1.0, 8 samples per task (orsgen eval's
#     Python API through transformers serve: OUT/eval/train/before);
#  3. export the passing rollouts (orsgen sft: OUT/sft-data, with its dataset card);
#  4. fine-tune on them (examples/sft.py with examples/recipes/sft.yaml: OUT/model-sft);
#  5. GRPO from there (examples/grpo.py with examples/recipes/grpo.yaml), the evaluation of
#     step 2 as the pass-rate curriculum's prior: OUT/model-after, with steps.csv (reward,
#     coverage, grad norm per step), reward.png and ors_tasks.csv;
#  6. evaluate the warmed-up and the trained model on the held-out test split, and the
#     trained one on the train split (OUT/eval/<split>/<before|after>);
#  7. compare each pair (orsgen compare).
# What each step printed in full is in OUT/logs/<step>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/python.sh
export OPENREWARD_DISABLE_UPDATE_CHECK=1 OPENREWARD_LOG_LEVEL=WARNING
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRL_EXPERIMENTAL_SILENCE=1
OUT="${1:-runs/demo}"
rm -rf "$OUT"
mkdir -p "$OUT/logs"
LOGS="$OUT/logs"

. scripts/step.sh

# One echo server for the whole loop, on a free port, stopped by its PID on exit.
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"
"$PY" examples/echo_env.py --host 127.0.0.1 --port "$PORT" >"$LOGS/echo-server.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true' EXIT
"$PY" - "$URL" "$SERVER" <<'EOF'
import os, sys, time, urllib.request
url, pid = sys.argv[1], int(sys.argv[2])
for _ in range(600):
    try:
        urllib.request.urlopen(f"{url}/echoenv/tools", timeout=2).read()
        sys.exit(0)
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            sys.exit("the echo server exited; see its log")
        time.sleep(0.1)
sys.exit("the echo server did not start")
EOF
echo "server: echo environment at $URL (pid $SERVER)"

step warm-up "" "$PY" examples/train_echo.py --warm-up-only --right-share 0.33 \
    --base-url "$URL" --output-dir "$OUT"
step eval-train "^before " "$PY" examples/eval_demo.py --url "$URL" \
    --before "$OUT/model-before" --split train -n 8 --out "$OUT/eval" --no-compare
step sft-export "" "$PY" -m orsgen sft "$OUT/eval/train/before" -o "$OUT/sft-data"
step sft "" "$PY" examples/sft.py --config examples/recipes/sft.yaml \
    --model_name_or_path "$OUT/model-before" --dataset_path "$OUT/sft-data" \
    --output_dir "$OUT/model-sft"
step grpo "" "$PY" examples/grpo.py --config examples/recipes/grpo.yaml \
    --model_name_or_path "$OUT/model-sft" --base_url "$URL" \
    --prior "$OUT/eval/train/before" --output_dir "$OUT/model-after"
"$PY" - "$OUT/model-after" <<'EOF'
import csv, sys
from pathlib import Path
sys.path.insert(0, "examples")
from training_report import StepRow, write_plot
out = Path(sys.argv[1])
with (out / "steps.csv").open() as f:
    rows = [StepRow(int(r["step"]), float(r["reward_mean"]), float(r["reward_std"]),
                    float(r["coverage"]) if r["coverage"] else None, float(r["grad_norm"]))
            for r in csv.DictReader(f)]
write_plot(rows, out / "reward.png")
EOF
step eval-after "^(before|after) " "$PY" examples/eval_demo.py --url "$URL" \
    --before "$OUT/model-before" --after "$OUT/model-after" --split test --split train \
    -n 8 --out "$OUT/eval" --no-compare --keep-existing
for split in test train; do
    step "compare-$split" "^pass@1" "$PY" -m orsgen compare \
        "$OUT/eval/$split/before" "$OUT/eval/$split/after"
done

#!/usr/bin/env bash
# An evaluation in shards on a SLURM cluster, then the shards merged into one run
# (docs/evaluating.md, "Sharding"). Submit the shards as an array whose indices are 0..N-1,
# then the merge once they all succeeded:
#
#   job=$(sbatch --parsable --array=0-7 examples/slurm_eval.sh)       # 8 shards
#   sbatch --dependency=afterok:"${job%%;*}" examples/slurm_eval.sh   # the merge
#
# An array task runs shard $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT into
# $RUNS/shard-$SLURM_ARRAY_TASK_ID, and continues it when the task is requeued; the job
# without an array index merges every shard into $RUNS/merged. Settings come from the
# environment, which sbatch passes on: PACKAGE (the generated package), ENDPOINT and MODEL,
# BASE_URL (the ORS server, unless the package records one), SPLIT, SAMPLES, RUNS, and
# EVAL_ARGS (more `orsgen eval` options: "--seed 1 --concurrency 32").
#SBATCH --job-name=orsgen-eval
#SBATCH --cpus-per-task=2
#SBATCH --time=04:00:00
#SBATCH --output=%x-%A_%a.out
set -euo pipefail

RUNS="${RUNS:-runs/eval}"

if [[ -z "${SLURM_ARRAY_TASK_ID:-}" ]]; then
    exec orsgen merge "$RUNS"/shard-* --out "$RUNS/merged"
fi

# --resume: the first run starts the shard, a requeued (preempted) one continues it.
# shellcheck disable=SC2086  # EVAL_ARGS is a list of words
exec orsgen eval "${PACKAGE:?the generated package directory}" \
    --endpoint "${ENDPOINT:?the model endpoint, http://HOST:8000/v1}" \
    --model "${MODEL:?the model name the endpoint serves}" \
    ${BASE_URL:+--base-url "$BASE_URL"} \
    --split "${SPLIT:-test}" -n "${SAMPLES:-1}" --no-progress \
    --shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT" \
    --out "$RUNS/shard-$SLURM_ARRAY_TASK_ID" --resume ${EVAL_ARGS:-}

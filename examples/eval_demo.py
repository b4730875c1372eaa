"""Evaluate models on the echo environment through a real OpenAI-compatible server, and
compare them: the "did training help?" step of the demo (scripts/demo.sh runs it on the
models examples/train_echo.py saved)::

    python examples/eval_demo.py --before runs/demo/model-before --after runs/demo/model-after \\
        --out runs/demo/eval [--url http://127.0.0.1:8080] [--split test [--split train]] [-n 4]

One ``transformers serve`` on 127.0.0.1 (a free port, stopped by PID) serves both model
directories, each request naming its model by path. Each model is evaluated with
``orsgen eval``'s Python API on each ``--split`` (default: test, the tasks the demo never
trains on) through the generated package generated/echo, against the echo server at
``--url`` (or one this script starts). Runs go to ``--out``/SPLIT/before and
``--out``/SPLIT/after, each with its results.jsonl, summary.json and report.md; then the two
runs of each split are compared as ``orsgen compare`` does (``--no-compare``: leave
that to the command). With only ``--before``, its runs are evaluated and summarised.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "examples")]
for _k, _v in {
    "OPENREWARD_DISABLE_UPDATE_CHECK": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}.items():
    os.environ.setdefault(_k, _v)

from serve_model import ModelServer, start_model_server, stop_process  # noqa: E402
from train_echo import start_server  # noqa: E402

from generated.echo import EchoEnv  # noqa: E402
from orsgen import EvalConfig, compare_runs, evaluate, format_comparison, load_summary  # noqa: E402

# Sampled as GRPOTrainer sampled the rollouts in training (TRL's default temperature 1.0):
# greedy decoding would answer every sample of a task alike. The server is seeded once at
# start, and the rollouts run one at a time, so a rerun repeats. (Not orsgen eval's
# seed=: it sends one seed with every request, and transformers serve reseeds on each,
# so the n samples of a task would all be the same sample.)
TEMPERATURE = 1.0
SERVER_SEED = 0


def evaluate_model(
    server: ModelServer, model: Path, url: str, split: str, n: int, out: Path
) -> dict[str, Any]:
    """Evaluate ``model`` (served by ``server``) on ``split``; the run's summary."""
    config = EvalConfig(
        endpoint=server.endpoint, model=str(model), split=split, n=n, temperature=TEMPERATURE
    )
    result = evaluate(EchoEnv, config, adapter={"base_url": url}, out=out, progress=False)
    print(f"{out.name} ({model}): {result.headline()}", flush=True)  # as `orsgen eval` ends
    return result.summary


def evaluate_models(
    models: dict[str, Path],
    url: str,
    splits: list[str],
    n: int,
    out: Path,
    keep_existing: bool = False,
) -> dict[str, dict[str, dict[str, Any]]]:
    """Serve ``models`` (run name -> model directory) from one ``transformers serve`` and
    evaluate each on each split into ``out``/<split>/<run name>; the summaries by split
    and run name. With ``keep_existing`` a run directory that already holds a finished run
    is kept as it is (its summary read back), not evaluated again."""
    server = start_model_server(None, out, seed=SERVER_SEED)
    print(f"transformers serve: {server.endpoint} (pid {server.process.pid})", flush=True)
    runs: dict[str, dict[str, dict[str, Any]]] = {}
    try:
        for split in splits:
            for name, model in models.items():
                run = out / split / name
                if keep_existing and (run / "summary.json").is_file():
                    print(f"{name} ({model}): kept the finished run in {run}", flush=True)
                    runs.setdefault(split, {})[name] = load_summary(run)
                    continue
                summary = evaluate_model(server, model, url, split, n, run)
                runs.setdefault(split, {})[name] = summary
        return runs
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", help="the echo ORS server (default: start one on 127.0.0.1)")
    parser.add_argument("--before", required=True, type=Path, help="model directory")
    parser.add_argument("--after", type=Path, help="model directory after training")
    parser.add_argument(
        "--split",
        action="append",
        help="a split to evaluate (repeat for several; default: test)",
    )
    parser.add_argument("-n", "--samples", type=int, default=4, help="samples per task")
    parser.add_argument("--out", type=Path, help="where the runs go (default: a new temp dir)")
    parser.add_argument(
        "--no-compare", action="store_true", help="do not print the comparison of the two runs"
    )
    parser.add_argument(
        "--keep-existing",
        action="store_true",
        help="keep a run directory that already holds a finished run instead of evaluating "
        "that model on that split again",
    )
    opts = parser.parse_args(argv)
    out = opts.out or Path(tempfile.mkdtemp(prefix="orsgen-eval-"))
    out.mkdir(parents=True, exist_ok=True)
    models = {"before": opts.before, **({"after": opts.after} if opts.after else {})}
    echo = None
    url = opts.url
    if url is None:
        echo, url = start_server(out / "echo-server.log")
    splits = opts.split or ["test"]
    try:
        runs = evaluate_models(
            models, url.rstrip("/"), splits, opts.samples, out, opts.keep_existing
        )
    finally:
        if echo is not None:
            stop_process(echo)
    for split, by_name in runs.items():
        print(f"runs: {', '.join(str(out / split / n) for n in by_name)} (report.md in each)")
        if "after" in by_name and not opts.no_compare:
            print(format_comparison(compare_runs([by_name["before"], by_name["after"]])))
    return 0


if __name__ == "__main__":
    sys.exit(main())

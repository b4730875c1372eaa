"""``orsgen eval`` at scale (issue 29): peak memory and rollouts per second of
``orsgen.eval.evaluate`` for a number of rollouts, each 16 messages of 2 KB (a 2 KB prompt,
7 tool calls with 2 KB arguments and 2 KB results, and a 2 KB answer), writing its files
(``out=``) and writing nothing (``out=None``).

    python bench/eval_scale.py [--rollouts 1000,10000] [--repeats 1] [--concurrency 4] [--out DIR]

The environment is bench/lottery_env.py (each task wins with its own probability) on a
local ORS server; the endpoint is tests/openai_standin.py, a scripted OpenAI-compatible
server that answers at once, so the endpoint costs nothing and what is measured is orsgen
and the environment. Each measurement runs in a process of its own (its peak RSS is that
run's): ``rollouts`` = tasks x 10 samples. Each size runs ``--repeats`` pairs, writing
nothing then writing, so that a busy machine slows both alike; the ratio is of the medians.
Goals: peak memory flat in the number of rollouts, and rollouts per second writing within
10% of writing nothing. Writes
``DIR/eval_scale.json`` and ``DIR/eval_scale.md`` (default bench/results).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "examples")]
SAMPLES = 10
CALLS, SIZE = 7, 2048  # 16 messages of 2 KB
for _k, _v in {
    "OPENREWARD_DISABLE_UPDATE_CHECK": "1",
    "OPENREWARD_LOG_LEVEL": "ERROR",
    "LOTTERY_CALLS": str(CALLS),
    "LOTTERY_PROMPT": str(SIZE),
    "LOTTERY_OUTPUT": str(SIZE),
}.items():
    os.environ.setdefault(_k, _v)


def child(opts: argparse.Namespace) -> None:
    """One measurement, in this process: print its figures as one JSON line."""
    from conftest import import_generated

    from orsgen.eval import evaluate

    pkg = import_generated(Path(opts.package))
    out = Path(opts.write) if opts.write else None
    result = evaluate(
        pkg.LotteryEnv,
        endpoint=opts.endpoint,
        model="standin",
        split="test",
        samples=SAMPLES,
        num_tasks=opts.rollouts // SAMPLES,
        concurrency=opts.concurrency,
        out=out,
        base_url=opts.base_url,
        progress=False,
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    figures = {
        "rollouts": len(result.records),
        "writes": out is not None,
        "coverage": result.coverage,
        "seconds": round(result.seconds, 2),
        "rollouts_per_second": round(len(result.records) / result.seconds, 2),
        "peak_rss_mb": round(peak, 1),
        "results_mb": (
            round((out / "results.jsonl").stat().st_size / 2**20, 1) if out is not None else 0
        ),
    }
    print(json.dumps(figures), flush=True)


def measure(levels: list[int], repeats: int, concurrency: int, out_dir: Path) -> dict[str, Any]:
    import openai_standin
    import ors_server
    from conftest import generate_and_import

    work = Path(tempfile.mkdtemp(prefix="orsgen-bench-eval-scale-"))
    os.environ["LOTTERY_TASKS"] = str(max(levels) // SAMPLES)
    server = ors_server.start(BENCH / "lottery_env.py", log_dir=work)
    standin = openai_standin.start(work, tool="draw", calls=CALLS, size=SIZE)
    runs: list[dict[str, Any]] = []
    try:
        package = work / "lottery_scale"
        generate_and_import(server.url, package, class_name="LotteryEnv")
        for rollouts in levels:
            for writes in [False, True] * repeats:
                target = work / f"run-{rollouts}"
                shutil.rmtree(target, ignore_errors=True)
                args = [
                    sys.executable,
                    __file__,
                    "--child",
                    "--package",
                    str(package),
                    "--endpoint",
                    standin.endpoint,
                    "--base-url",
                    server.url,
                    "--rollouts",
                    str(rollouts),
                    "--concurrency",
                    str(concurrency),
                ] + (["--write", str(target)] if writes else [])
                done = subprocess.run(args, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    raise RuntimeError(done.stderr[-3000:])
                runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(json.dumps(runs[-1]), flush=True)
                shutil.rmtree(target, ignore_errors=True)
    finally:
        standin.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    report = {
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "setup": {
            "environment": "bench/lottery_env.py",
            "endpoint": "tests/openai_standin.py (answers at once)",
            "messages_per_rollout": 2 + 2 * CALLS,
            "message_bytes": SIZE,
            "samples_per_task": SAMPLES,
            "concurrency": concurrency,
            "repeats": repeats,
        },
        "runs": runs,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "eval_scale.json").write_text(json.dumps(report, indent=2) + "\n")
    (out_dir / "eval_scale.md").write_text(_markdown(report))
    return report


def _markdown(report: dict[str, Any]) -> str:
    m, s = report["machine"], report["setup"]
    lines = [
        "# orsgen eval at scale (bench/eval_scale.py)",
        "",
        f"{report['when']}, {m['cpus']} CPUs (load average {m['load_average_1m']} at the end), "
        f"Python {m['python']}. {s['messages_per_rollout']} messages of {s['message_bytes']} "
        f"bytes per rollout, {s['samples_per_task']} samples per task, concurrency "
        f"{s['concurrency']}; {s['environment']} on a local ORS server, {s['endpoint']}.",
        "",
        "| rollouts | writes | rollouts/s | peak RSS MB | results.jsonl MB |",
        "|---:|---|---:|---:|---:|",
    ]
    for r in report["runs"]:
        lines.append(
            f"| {r['rollouts']} | {'yes' if r['writes'] else 'no'} | "
            f"{r['rollouts_per_second']} | {r['peak_rss_mb']} | {r['results_mb']} |"
        )
    lines.append("")
    for line in _verdicts(report["runs"]):
        lines.append(f"- {line}")
    return "\n".join(lines) + "\n"


def _verdicts(runs: list[dict[str, Any]]) -> list[str]:
    """The goals, from the medians of each (size, writes) and the peak RSS of each size."""

    def of(rollouts: int, writes: bool, key: str) -> list[float]:
        return [r[key] for r in runs if r["rollouts"] == rollouts and r["writes"] == writes]

    out: list[str] = []
    sizes = sorted({r["rollouts"] for r in runs})
    for rollouts in sizes:
        quiet, writing = of(rollouts, False, "rollouts_per_second"), of(
            rollouts, True, "rollouts_per_second"
        )
        if quiet and writing:
            ratio = statistics.median(writing) / statistics.median(quiet)
            out.append(
                f"{rollouts} rollouts: writing runs at {ratio:.2f} of the speed of writing "
                f"nothing (medians of {len(writing)} and {len(quiet)} runs; goal: at least 0.90)"
            )
    if len(sizes) > 1:
        low, high = of(sizes[0], True, "peak_rss_mb"), of(sizes[-1], True, "peak_rss_mb")
        if low and high:
            out.append(
                f"peak RSS writing: {max(low)} MB at {sizes[0]} rollouts, {max(high)} MB at "
                f"{sizes[-1]} (goal: about the same)"
            )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rollouts", default="1000,10000")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--out", type=Path, default=BENCH / "results")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--package", help=argparse.SUPPRESS)
    p.add_argument("--endpoint", help=argparse.SUPPRESS)
    p.add_argument("--base-url", help=argparse.SUPPRESS)
    p.add_argument("--write", help=argparse.SUPPRESS)
    opts = p.parse_args()
    if opts.child:
        opts.rollouts = int(opts.rollouts)
        child(opts)
        return
    measure([int(x) for x in opts.rollouts.split(",")], opts.repeats, opts.concurrency, opts.out)


if __name__ == "__main__":
    main()

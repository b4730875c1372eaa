"""``orsgen eval`` speed (issue 22): rollouts per second at concurrency 1, 8 and 32 against
one OpenAI-compatible endpoint and one ORS environment, and the time orsgen itself adds per
turn outside the endpoint and the environment.

    python bench/eval.py [--concurrency 1,8,32] [--rollouts-per-worker 4] [--out DIR]

It serves tests/envs/chance_env.py (tests/serve_env.py, 127.0.0.1), generates its adapter,
warms up the tiny local model (examples/tiny_model.py) on that adapter's tool JSON and serves
it with ``transformers serve`` on CPU. Each concurrency level evaluates the ``test`` split
(``orsgen.eval.evaluate``) with enough samples for ``--rollouts-per-worker`` rollouts per
worker (at least 16). Per rollout, results.jsonl records the wall time, the time inside the
endpoint requests and the time inside the adapter's ``reset`` and tool calls; what is left,
per assistant turn, is orsgen's own time (building messages and tool schemas, parsing tool
calls, scoring through ``outcome_reward``, writing the row). Writes ``DIR/eval.json`` and
``DIR/eval.md`` (default bench/results).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "examples")]
for _k, _v in {
    "OPENREWARD_DISABLE_UPDATE_CHECK": "1",
    "OPENREWARD_LOG_LEVEL": "ERROR",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}.items():
    os.environ.setdefault(_k, _v)

import ors_server  # noqa: E402  (tests/ors_server.py)
from chance_model import warm_chance_model  # noqa: E402  (tests/chance_model.py)
from serve_model import start_model_server  # noqa: E402  (examples/serve_model.py)

from orsgen.eval import EvalConfig, evaluate  # noqa: E402

CHANCE_ENV = ROOT / "tests" / "envs" / "chance_env.py"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(levels: list[int], per_worker: int, out_dir: Path) -> dict[str, Any]:
    from conftest import generate_and_import

    work = Path(tempfile.mkdtemp(prefix="orsgen-bench-eval-"))
    server = ors_server.start(CHANCE_ENV, log_dir=work)
    model = None
    try:
        pkg = generate_and_import(server.url, work / "chance_bench", class_name="ChanceEnv")
        spec = importlib.util.spec_from_file_location("chance_tasks", CHANCE_ENV)
        assert spec is not None and spec.loader is not None
        chance = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(chance)
        tasks = [t for split in chance.SPLITS.values() for t in split]
        model_dir = warm_chance_model(work / "model", pkg.ChanceEnv(base_url=server.url), tasks)
        model = start_model_server(model_dir, work)
        test_tasks = len(chance.SPLITS["test"])
        levels_out = []
        for level in levels:
            samples = max(32, per_worker * level) // test_tasks
            result = evaluate(
                pkg.ChanceEnv,
                EvalConfig(endpoint=model.endpoint, model=model.model, split="test", n=samples),
                adapter={"base_url": server.url},
                concurrency=level,
                out=work / f"c{level}",
                progress=False,
            )
            wall = result.seconds  # the rollouts alone: no setup, no report
            rows = list(result.transcripts())  # full rows: the time split per rollout
            turns = sum(max(1, r["turns"]) for r in rows)
            outside = sum(r["endpoint_seconds"] + r["environment_seconds"] for r in rows)
            own = [
                (r["seconds"] - r["endpoint_seconds"] - r["environment_seconds"])
                / max(1, r["turns"])
                * 1000
                for r in rows
            ]
            level_figures: dict[str, Any] = {
                "concurrency": level,
                "rollouts": len(rows),
                "coverage": result.coverage,
                "wall_seconds": round(wall, 3),
                "rollouts_per_second": round(len(rows) / wall, 2),
                "endpoint_ms_per_turn_median": round(
                    statistics.median(
                        r["endpoint_seconds"] / max(1, r["turns"]) * 1000 for r in rows
                    ),
                    2,
                ),
                "environment_ms_per_rollout_median": round(
                    statistics.median(r["environment_seconds"] * 1000 for r in rows), 2
                ),
                # Inside each rollout, outside the endpoint and the environment.
                "orsgen_ms_per_turn_median": round(statistics.median(own), 3),
                "orsgen_ms_per_turn_p90": round(_percentile(own, 0.9), 3),
            }
            if level == 1:
                # One rollout at a time: everything of the loop's wall time that is not the
                # endpoint or the environment is orsgen's (row writing and fsync included).
                level_figures["orsgen_ms_per_turn_all_in"] = round(
                    (wall - outside) / turns * 1000, 3
                )
            levels_out.append(level_figures)
            print(json.dumps(levels_out[-1]), flush=True)
    finally:
        if model is not None:
            model.stop()
        server.stop()
    report = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_1m": round(os.getloadavg()[0], 2),
        },
        "levels": levels_out,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "eval.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        "# orsgen eval speed (bench/eval.py)",
        "",
        f"{report['machine']['cpus']} CPUs, load average {report['machine']['load_average_1m']};"
        " tiny model behind `transformers serve` on CPU; tests/envs/chance_env.py.",
        "",
        "| concurrency | rollouts | rollouts/s | endpoint ms/turn | orsgen ms/turn (median, p90) |",
        "|---|---|---|---|---|",
    ]
    all_in = levels_out[0].get("orsgen_ms_per_turn_all_in") if levels_out else None
    for lv in levels_out:
        lines.append(
            f"| {lv['concurrency']} | {lv['rollouts']} | {lv['rollouts_per_second']} | "
            f"{lv['endpoint_ms_per_turn_median']} | {lv['orsgen_ms_per_turn_median']}, "
            f"{lv['orsgen_ms_per_turn_p90']} |"
        )
    if all_in is not None:
        lines += [
            "",
            f"At concurrency 1, orsgen's whole time per turn outside the endpoint and the "
            f"environment (results row, fsync and progress bar included): {all_in} ms.",
        ]
    (out_dir / "eval.md").write_text("\n".join(lines) + "\n")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--rollouts-per-worker", type=int, default=4)
    parser.add_argument("--out", type=Path, default=BENCH / "results")
    opts = parser.parse_args()
    levels = [int(x) for x in opts.concurrency.split(",")]
    run(levels, opts.rollouts_per_worker, opts.out)


if __name__ == "__main__":
    main()

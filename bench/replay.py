"""``orsgen replay`` speed (issue 41): a replay against ``orsgen eval`` of the same rollouts
with an endpoint that answers at once (tests/openai_standin.py), on examples/echo_env.py.

    python bench/replay.py [--samples 32] [--concurrency 1,8] [--rounds 3] [--out DIR]

It serves the echo environment (tests/serve_env.py, 127.0.0.1), generates its package, and
per concurrency level records an evaluation of the train split's 4 tasks x ``--samples``
(each rollout 1 or 2 ``echo`` calls: the stand-in's ``--quote 2``), then replays it, ``--rounds`` times (medians and ranges: the machine is shared). Both run
as a user runs them (``python -m orsgen``); the figures are their rollouts' wall time (eval's
headline, replay's summary.json ``seconds``: no process start, no report) and, per rollout,
the time inside the environment (eval's ``environment_seconds``; a replay's row is all
environment: its resets and calls). Writes ``DIR/replay.json`` and ``DIR/replay.md``
(default bench/results).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "examples")]
os.environ.setdefault("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
os.environ.setdefault("OPENREWARD_LOG_LEVEL", "ERROR")

import openai_standin  # noqa: E402  (tests/openai_standin.py)
import ors_server  # noqa: E402  (tests/ors_server.py)

ECHO_ENV = ROOT / "examples" / "echo_env.py"


def orsgen(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "orsgen", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


def rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def level(
    work: Path, package: Path, url: str, endpoint: str, samples: int, c: int, rounds: int
) -> dict[str, Any]:
    found = [
        one_round(work / f"c{c}-r{r}", package, url, endpoint, samples, c) for r in range(rounds)
    ]
    out: dict[str, Any] = {k: found[0][k] for k in ("concurrency", "rollouts", "calls")}
    for key in found[0]:
        if key not in out:
            values = [f[key] for f in found]
            out[key] = round(statistics.median(values), 3)
            out[f"{key}_range"] = [min(values), max(values)]
    return out


def one_round(
    work: Path, package: Path, url: str, endpoint: str, samples: int, c: int
) -> dict[str, Any]:
    work.mkdir()
    recorded, replayed = work / "eval", work / "replay"
    evaluation = orsgen(
        "eval", str(package), "--endpoint", endpoint, "--model", "standin", "--base-url", url,
        "-n", str(samples), "--seed", "3", "--concurrency", str(c), "--no-progress",
        "--out", str(recorded),
    )  # fmt: skip
    assert evaluation.returncode == 0, evaluation.stderr
    eval_wall = float(re.findall(r" in ([0-9.]+) s:", evaluation.stdout)[0])
    replay = orsgen(
        "replay", str(recorded), "--out", str(replayed), "--base-url", url,
        "--concurrency", str(c),
    )  # fmt: skip
    assert replay.returncode == 0, replay.stderr
    summary = json.loads((replayed / "summary.json").read_text())
    assert summary["changed"] == 0, summary
    recorded_rows, replayed_rows = rows(recorded), rows(replayed)
    count = len(recorded_rows)
    return {
        "concurrency": c,
        "rollouts": count,
        "calls": sum(len(r["env_calls"]) for r in recorded_rows),
        "eval_wall_seconds": eval_wall,
        "replay_wall_seconds": summary["seconds"],
        "eval_rollouts_per_second": round(count / eval_wall, 2),
        "replay_rollouts_per_second": round(count / summary["seconds"], 2),
        "eval_environment_ms_per_rollout_median": round(
            statistics.median(r["environment_seconds"] * 1000 for r in recorded_rows), 2
        ),
        "replay_ms_per_rollout_median": round(
            statistics.median(r["seconds"] * 1000 for r in replayed_rows), 2
        ),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--samples", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--concurrency", default="1,8")
    p.add_argument("--out", type=Path, default=BENCH / "results")
    opts = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="orsgen-bench-replay-"))
    server = ors_server.start(ECHO_ENV, log_dir=work)
    model = openai_standin.start(work, tool="echo", argument="text", calls=2, quote=2)
    try:
        package = work / "echo_bench"
        made = orsgen(server.url, "-o", str(package), "-q")
        assert made.returncode == 0, made.stderr
        levels = [
            level(work, package, server.url, model.endpoint, opts.samples, int(c), opts.rounds)
            for c in opts.concurrency.split(",")
        ]
    finally:
        model.stop()
        server.stop()
    machine = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    report = {"machine": machine, "levels": levels}
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "replay.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        "# orsgen replay speed (bench/replay.py)",
        "",
        f"{machine['cpus']} CPUs, load average {machine['load_average_1m']} (a shared machine); "
        "examples/echo_env.py on 127.0.0.1; the eval's endpoint answers at once "
        "(tests/openai_standin.py). Wall seconds of the rollouts alone; medians of "
        f"{opts.rounds} rounds, each a new recording and its replay (ranges in replay.json).",
        "",
        "| concurrency | rollouts | calls | eval s | replay s | eval rollouts/s | "
        "replay rollouts/s | eval env ms/rollout | replay ms/rollout |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for f in levels:
        lines.append(
            f"| {f['concurrency']} | {f['rollouts']} | {f['calls']} | {f['eval_wall_seconds']} | "
            f"{f['replay_wall_seconds']} | {f['eval_rollouts_per_second']} | "
            f"{f['replay_rollouts_per_second']} | {f['eval_environment_ms_per_rollout_median']} | "
            f"{f['replay_ms_per_rollout_median']} |"
        )
    (opts.out / "replay.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

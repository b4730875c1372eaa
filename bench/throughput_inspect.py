"""inspect-openreward's side of bench/throughput.py: one Inspect eval of the lottery
environment, run by the separate environment that has inspect-ai and inspect-openreward
(bench/.venv-inspect), never the project's. Prints one JSON line of figures.

    bench/.venv-inspect/bin/python bench/throughput_inspect.py --ors URL --endpoint URL/v1
        --rollouts 256 --concurrency 32 --log-dir DIR

It is inspect-openreward's own quickstart (``openreward_dataset``, ``openreward_solver``
with its default ``generate(tool_calls="loop")``, ``openreward_scorer``), with the model
``openai-api/standin/standin`` (Inspect's OpenAI-compatible provider: chat completions at
``--endpoint``), ``max_samples`` and ``max_connections`` both the concurrency, and the
OpenReward client pointed at the local ORS server (``OPENREWARD_SESSION_URL``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from typing import Any


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _span(events: list[Any], kind: str) -> float:
    """Seconds between start and completion of the sample's ``kind`` events, summed."""
    return sum(
        (e.completed - e.timestamp).total_seconds()
        for e in events
        if e.event == kind and e.completed is not None
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ors", required=True)
    p.add_argument("--endpoint", required=True)
    p.add_argument("--env", default="lotteryenv")
    p.add_argument("--split", default="test")
    p.add_argument("--rollouts", type=int, required=True)
    p.add_argument("--concurrency", type=int, required=True)
    p.add_argument("--log-dir", required=True)
    opts = p.parse_args()
    os.environ["OPENREWARD_SESSION_URL"] = opts.ors
    os.environ.setdefault("OPENREWARD_API_KEY", "bench")
    os.environ["STANDIN_BASE_URL"] = opts.endpoint
    os.environ["STANDIN_API_KEY"] = "EMPTY"

    from datetime import datetime

    from inspect_ai import Task, eval
    from inspect_openreward import openreward_dataset, openreward_scorer, openreward_solver
    from openreward import OpenReward

    env = OpenReward().environments.get(opts.env)

    def run(rollouts: int, log_dir: str) -> Any:
        task = Task(
            dataset=openreward_dataset(env, split=opts.split, limit=rollouts),
            solver=openreward_solver(env),
            scorer=openreward_scorer(),
        )
        (log,) = eval(
            task,
            model="openai-api/standin/standin",
            max_samples=opts.concurrency,
            max_connections=opts.concurrency,
            log_dir=log_dir,
            display="none",
        )
        return log

    run(1, os.path.join(opts.log_dir, "warm-up"))  # imports and one-time costs paid here
    cpu0, wall0 = _cpu(), time.monotonic()
    log = run(opts.rollouts, opts.log_dir)
    wall, cpu = time.monotonic() - wall0, _cpu() - cpu0
    samples = log.samples or []
    starts = [datetime.fromisoformat(s.started_at) for s in samples if s.started_at]
    ends = [datetime.fromisoformat(s.completed_at) for s in samples if s.completed_at]
    seconds = (max(ends) - min(starts)).total_seconds() if starts and ends else wall
    turns = [sum(1 for e in s.events if e.event == "model") for s in samples]
    scored = [s for s in samples if s.scores and not s.error]
    figures = {
        "status": log.status,
        "error": str(log.error.message) if log.error else None,
        "rollouts": len(samples),
        "scored": len(scored),
        "turns": turns,
        "seconds": round(seconds, 3),
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
        "rollout_seconds": [round(s.total_time or 0.0, 4) for s in samples],
        "endpoint_seconds": [round(_span(s.events, "model"), 4) for s in samples],
        "environment_seconds": [round(_span(s.events, "tool"), 4) for s in samples],
    }
    print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()

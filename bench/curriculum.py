"""Spend rollouts where they teach (issue 23): uniform task choice vs the pass-rate
curriculum at an equal rollout budget, on an environment whose tasks succeed with known
probabilities.

    python bench/curriculum.py [--groups 200] [--group-size 4] [--batch-groups 2]
                               [--seed 0] [--coin-seed 0] [--out DIR]

It serves bench/coin_env.py (20 tasks: 7 always solved, 7 never, 6 half the time; the
environment draws each reward itself, so no model is needed) with the tests' instrumented
server (tests/serve_env.py) on 127.0.0.1, a fresh server per arm so both arms see the
same draws. Each arm drives the GENERATED package (bench/coinenv) as GRPOTrainer does with
``train_dataset=None``: ``--batch-groups`` groups of ``--group-size`` adapter instances
reset with TRL's placeholder row (the adapter chooses the task), answer in plain text and
are scored by the generated ``outcome_reward`` (which submits the answer through the
terminal tool and settles the rollouts, feeding the curriculum). Nothing is simulated.

Reported per arm: the share of zero-variance groups (all scored rollouts alike: no GRPO
advantage), rollouts spent per informative group, how often the least-seen task was
chosen, and the mean of the ``ors/curriculum/*`` metrics the trainer's log would get.
Writes ``DIR/curriculum.json`` and ``DIR/curriculum.md`` (default bench/results).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "examples"), str(BENCH)]
for _k, _v in {"OPENREWARD_DISABLE_UPDATE_CHECK": "1", "OPENREWARD_LOG_LEVEL": "ERROR"}.items():
    os.environ.setdefault(_k, _v)

import ors_server  # noqa: E402  (tests/ors_server.py)

COIN_ENV = BENCH / "coin_env.py"
PLACEHOLDER = {"prompt": [{"role": "user", "content": ""}]}  # TRL's row with no dataset
TASK = re.compile(r"Task (\d+):")


def run_arm(
    url: str, curriculum: str, groups: int, group_size: int, batch_groups: int, seed: int
) -> dict[str, Any]:
    """One arm: ``groups`` groups in batches, through the generated package."""
    from coinenv import CoinEnv, outcome_reward

    from orsgen.runtime.rollouts import tasks

    tasks.samplers().clear()  # each arm starts its own stream
    width = group_size * batch_groups
    envs = [
        CoinEnv(base_url=url, group_size=group_size, seed=seed, curriculum=curriculum)
        for _ in range(width)
    ]
    chosen: list[int] = []
    group_rewards: list[list[float]] = []
    logged: dict[str, list[float]] = {}
    started = time.monotonic()
    try:
        for _batch in range(groups // batch_groups):
            prompts = [str(env.reset(**PLACEHOLDER)) for env in envs]
            found = [int(m.group(1)) for m in (TASK.search(p) for p in prompts) if m]
            assert len(found) == width, prompts
            rewards = outcome_reward(
                envs,
                completions=[[{"role": "assistant", "content": "yes"}]] * width,
                log_metric=lambda k, v: logged.setdefault(k, []).append(float(v)),
            )
            for g in range(batch_groups):
                members = found[g * group_size : (g + 1) * group_size]
                assert len(set(members)) == 1, f"a group spans tasks {members}"
                chosen.append(members[0])
                scored = rewards[g * group_size : (g + 1) * group_size]
                group_rewards.append([r for r in scored if r is not None])
    finally:
        for env in envs:
            env.close()
    zero = sum(1 for rs in group_rewards if not rs or max(rs) == min(rs))
    informative = len(group_rewards) - zero
    counts = [chosen.count(t) for t in range(20)]
    return {
        "curriculum": curriculum,
        "groups": len(group_rewards),
        "rollouts": len(group_rewards) * group_size,
        "unscored_rollouts": sum(group_size - len(rs) for rs in group_rewards),
        "zero_var_frac": round(zero / len(group_rewards), 4),
        "informative_groups": informative,
        "rollouts_per_informative_group": (
            round(len(group_rewards) * group_size / informative, 3) if informative else None
        ),
        "min_times_seen": min(counts),
        "times_seen": counts,
        "seconds": round(time.monotonic() - started, 2),
        "logged_means": {
            k: round(statistics.fmean(v), 4)
            for k, v in sorted(logged.items())
            if k.startswith("ors/curriculum/") or k == "ors/scored_frac"
        },
    }


def table(rows: list[dict[str, Any]]) -> str:
    head = "| arm | groups | zero-variance share | rollouts / informative group | least-seen task | s |"
    lines = [head, "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['curriculum']} | {r['groups']} | {r['zero_var_frac']:.3f} | "
            f"{r['rollouts_per_informative_group']} | {r['min_times_seen']} | {r['seconds']} |"
        )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=200)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--batch-groups", type=int, default=2, help="groups per generation batch")
    p.add_argument("--seed", type=int, default=0, help="the adapters' task-choice seed")
    p.add_argument("--coin-seed", type=int, default=0, help="the environment's draws")
    p.add_argument("--out", type=Path, default=BENCH / "results")
    args = p.parse_args()
    os.environ["COIN_SEED"] = str(args.coin_seed)  # the server subprocess inherits it
    rows = []
    for arm in ("uniform", "pass_rate"):
        server = ors_server.start(COIN_ENV)
        try:
            rows.append(
                run_arm(server.url, arm, args.groups, args.group_size, args.batch_groups, args.seed)
            )
        finally:
            server.stop()
    settings = {k: v for k, v in vars(args).items() if k != "out"}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "curriculum.json").write_text(
        json.dumps({"settings": settings, "arms": rows}, indent=2) + "\n"
    )
    md = f"# Curriculum benchmark\n\nSettings: `{json.dumps(settings)}`\n\n{table(rows)}\n"
    (args.out / "curriculum.md").write_text(md)
    print(table(rows))
    for r in rows:
        print(r["curriculum"], "times seen per task:", r["times_seen"])
        print(r["curriculum"], "logged means:", r["logged_means"])


if __name__ == "__main__":
    main()

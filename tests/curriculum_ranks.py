"""One rank of the curriculum's torchrun test (tests/test_e2e_curriculum_torchrun.py).

    torchrun --nproc_per_node 2 tests/curriculum_ranks.py --base-url URL --out DIR
             [--curriculum pass_rate] [--steps 10]

GRPOTrainer with ``train_dataset=None`` on coinenv (the generated bench/coinenv), groups
of 4 and 6 rows per rank, so one group of every step is split across the two ranks. Each
rank writes ``DIR/rank-<r>.json``: the task of each of its rows per step (from the prompts
TRL handed the reward function) and its curriculum's final state.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
from pathlib import Path
from typing import Any

from rank_setup import ROOT, offline

offline(ROOT / "bench")

TASK = re.compile(r"Task (\d+):")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--curriculum", default="pass_rate")
    p.add_argument("--steps", type=int, default=10)
    args = p.parse_args()

    import torch
    from coinenv import CoinEnv, outcome_reward
    from tiny_model import cpu_grpo_config
    from trl import GRPOTrainer

    from orsgen.runtime.choosing import tasks

    torch.set_num_threads(1)
    steps: list[list[int]] = []

    def recording_reward(environments: Any, prompts: Any, **kw: Any) -> Any:
        found = [TASK.findall(json.dumps(p)) for p in prompts]
        steps.append([int(f[-1]) for f in found])
        return outcome_reward(environments, **kw)

    recording_reward.__name__ = "outcome_reward"
    rank = int(os.environ.get("RANK", "0"))
    config = cpu_grpo_config(
        args.out / "trainer",
        max_steps=args.steps,
        num_generations=4,
        per_device_train_batch_size=6,  # 12 rows a step: the middle group spans both ranks
        max_completion_length=8,
    )
    trainer = GRPOTrainer(
        model=str(args.model),
        args=config,
        train_dataset=None,
        environment_factory=functools.partial(
            CoinEnv, base_url=args.base_url, curriculum=args.curriculum
        ),
        reward_funcs=recording_reward,
    )
    try:
        trainer.train()
    finally:
        CoinEnv.close_all()
    for chooser in tasks.samplers().all():
        chooser.synchronize()  # the last step's outcomes, as a checkpoint's save shares them
    states = [c.curriculum.state_dict() for c in tasks.samplers().all() if c.curriculum]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"rank-{rank}.json").write_text(
        json.dumps({"rank": rank, "steps": steps, "states": states}, sort_keys=True)
    )


if __name__ == "__main__":
    main()

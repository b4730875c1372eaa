"""One rank of the per-environment figures' torchrun test (tests/test_e2e_torchrun_envs.py).

    torchrun --nproc_per_node 2 tests/envs_ranks.py --echo-url URL --quiz-url URL
             --quiz-package DIR --model DIR --out DIR [--steps 3]

GRPOTrainer with a dict ``environment_factory`` (examples/echo_env.py's generated package
and the quiz of tests/envs/terminal_env.py) on ``bundle_tasks`` weighted 3:1, one block per
generation, ``shuffle_dataset=False``. Each rank writes ``DIR/rank-<r>.json``: per step, each
of its rollouts' environment and verdict (read from the environments TRL handed the reward
function), and the trainer's ``log_history`` (the same on every rank).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "examples")]
for _k, _v in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRL_EXPERIMENTAL_SILENCE": "1",
    "OPENREWARD_DISABLE_UPDATE_CHECK": "1",
}.items():
    os.environ.setdefault(_k, _v)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--echo-url", required=True)
    p.add_argument("--quiz-url", required=True)
    p.add_argument("--quiz-package", type=Path, required=True)
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--steps", type=int, default=3)
    args = p.parse_args()

    import torch
    from tiny_model import cpu_grpo_config
    from trl import GRPOTrainer

    from generated.echo import EchoEnv, outcome_reward
    from generated.echo import load_tasks as echo_tasks
    from orsgen import bundle_tasks

    sys.path.insert(0, str(args.quiz_package.parent))
    quiz = importlib.import_module(args.quiz_package.name)
    torch.set_num_threads(1)
    rank = int(os.environ.get("RANK", "0"))
    steps: list[list[list[Any]]] = []

    def recording_reward(environments: Any, **kwargs: Any) -> Any:
        rewards = outcome_reward(environments, **kwargs)
        outcomes = [e.rollout.outcome() for e in environments]
        steps.append([[o.environment, o.kind] for o in outcomes])
        return rewards

    recording_reward.__name__ = "outcome_reward"
    config = cpu_grpo_config(
        args.out / "trainer",
        max_steps=args.steps,
        per_device_train_batch_size=8,
        num_generations=2,
        shuffle_dataset=False,
    )
    block = config.generation_batch_size // config.num_generations  # 8 rows on 2 ranks
    data = bundle_tasks(
        {
            "echo": echo_tasks(base_url=args.echo_url),
            "quiz": quiz.load_tasks(base_url=args.quiz_url),
        },
        weights={"echo": 3, "quiz": 1},
        block=block,
        seed=0,  # the quiz rows land on rank 1 only: rank 0 logs its share, 0
    )
    trainer = GRPOTrainer(
        model=str(args.model),
        args=config,
        train_dataset=data,
        environment_factory={
            "echo": functools.partial(EchoEnv, base_url=args.echo_url),
            "quiz": functools.partial(quiz.QuizEnv, base_url=args.quiz_url),
        },
        reward_funcs=recording_reward,
    )
    try:
        trainer.train()
    finally:
        EchoEnv.close_all()
        quiz.QuizEnv.close_all()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"rank-{rank}.json").write_text(
        json.dumps({"rank": rank, "steps": steps, "log": trainer.state.log_history})
    )


if __name__ == "__main__":
    main()

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

from rank_setup import offline


def train_mixture(
    model: Path, config: Any, echo_url: str, quiz: Any, quiz_url: str, reward: Any
) -> tuple[Any, Any]:
    """A GRPOTrainer trained on echo and ``quiz`` (a generated package of
    tests/envs/terminal_env.py) weighted 3:1, one block of ``bundle_tasks`` per generation
    (seed 0); the trainer and its dataset."""
    from trl import GRPOTrainer

    from generated.echo import EchoEnv
    from generated.echo import load_tasks as echo_tasks
    from orsgen import bundle_tasks

    data = bundle_tasks(
        {"echo": echo_tasks(base_url=echo_url), "quiz": quiz.load_tasks(base_url=quiz_url)},
        weights={"echo": 3, "quiz": 1},
        block=config.generation_batch_size // config.num_generations,  # unique prompts a step
        seed=0,
    )
    trainer = GRPOTrainer(
        model=str(model),
        args=config,
        train_dataset=data,
        environment_factory={
            "echo": functools.partial(EchoEnv, base_url=echo_url),
            "quiz": functools.partial(quiz.QuizEnv, base_url=quiz_url),
        },
        reward_funcs=reward,
    )
    try:
        trainer.train()
    finally:
        EchoEnv.close_all()
        quiz.QuizEnv.close_all()
    return trainer, data


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--echo-url", required=True)
    p.add_argument("--quiz-url", required=True)
    p.add_argument("--quiz-package", type=Path, required=True)
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--steps", type=int, default=3)
    args = p.parse_args()

    offline()
    import torch
    from tiny_model import cpu_grpo_config

    from generated.echo import outcome_reward

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
        per_device_train_batch_size=8,  # 8 rows a block on 2 ranks: the quiz rows (seed 0)
        num_generations=2,  # land on rank 1 only, so rank 0 logs the quiz's share, 0
        shuffle_dataset=False,
    )
    trainer, _ = train_mixture(
        args.model, config, args.echo_url, quiz, args.quiz_url, recording_reward
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"rank-{rank}.json").write_text(
        json.dumps({"rank": rank, "steps": steps, "log": trainer.state.log_history})
    )


if __name__ == "__main__":
    main()

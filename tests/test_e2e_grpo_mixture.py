"""A weighted mixture of two environments through a real GRPOTrainer on CPU (issue 35):
examples/echo_env.py and tests/envs/terminal_env.py (a quiz graded through a @terminal
tool), a dict ``environment_factory``, ``bundle_tasks(..., weights={"echo": 3, "quiz": 1},
block=B)`` with ``B`` TRL's unique prompts per generation and ``shuffle_dataset=False``.

Every step's rollouts split 3:1 exactly, and each step is one block of the dataset, in
order. Nothing is mocked: the rollouts reach real ORS servers, and what the trainer scored
is read from the environments it handed the reward function."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

import ors_server
from conftest import served_package

pytestmark = pytest.mark.slow  # real training: the fast tier leaves it out

ROOT = Path(__file__).resolve().parents[1]
QUIZ = ROOT / "tests" / "envs" / "terminal_env.py"

pytest.importorskip("trl")
pytest.importorskip("tokenizers")

import tiny_model  # noqa: E402  (examples/, on sys.path via conftest)
from train_echo import warm_up_episodes  # noqa: E402

from generated.echo import EchoEnv, outcome_reward  # noqa: E402
from generated.echo import load_tasks as echo_tasks  # noqa: E402
from orsgen import bundle_tasks  # noqa: E402


@pytest.mark.timeout(600)
def test_every_step_splits_its_rollouts_by_the_weights(
    ors_servers: ors_server.Servers, echo_server: ors_server.RunningServer, tmp_path: Path
) -> None:
    from trl import GRPOTrainer

    quiz, quiz_server = served_package(ors_servers, QUIZ, tmp_path / "quiz_pkg")
    echo_data = echo_tasks(base_url=echo_server.url)
    probe = EchoEnv(base_url=echo_server.url)  # no I/O: only its tool methods
    model_dir = tiny_model.build_tiny_model(
        tmp_path / "tiny",
        tools=[probe.echo, probe.hint],
        episodes=warm_up_episodes(echo_server.url, echo_data),
        tool_name="echo",
    )
    args = tiny_model.cpu_grpo_config(
        tmp_path / "out",
        max_steps=4,
        per_device_train_batch_size=8,
        num_generations=2,
        shuffle_dataset=False,
    )
    block = args.generation_batch_size // args.num_generations  # unique prompts per step
    assert block == 4 and args.steps_per_generation == args.gradient_accumulation_steps == 1
    data = bundle_tasks(
        {"echo": echo_data, "quiz": quiz.load_tasks(base_url=quiz_server.url)},
        weights={"echo": 3, "quiz": 1},
        block=block,
        seed=0,
    )
    # echo's 4 tasks at 3 a block and quiz's 2 at 1 a block: 2 blocks cover both.
    assert len(data) == 2 * block

    steps: list[list[tuple[str, int | None]]] = []

    def recording_reward(environments: Any, **kwargs: Any) -> list[float | None]:
        """outcome_reward itself, with each rollout's environment and task written down."""
        steps.append([(type(e).__name__, e.rollout.task_index) for e in environments])
        return outcome_reward(environments, **kwargs)

    recording_reward.__name__ = outcome_reward.__name__
    trainer = GRPOTrainer(
        model=str(model_dir),
        args=args,
        train_dataset=data,
        environment_factory={
            "echo": functools.partial(EchoEnv, base_url=echo_server.url),
            "quiz": functools.partial(quiz.QuizEnv, base_url=quiz_server.url),
        },
        reward_funcs=recording_reward,
    )
    try:
        trainer.train()
    finally:
        EchoEnv.close_all()
        quiz.QuizEnv.close_all()

    assert len(steps) == 4, steps
    names = {"echo": "EchoEnv", "quiz": "QuizEnv"}
    for step, rollouts in enumerate(steps):
        kinds = [kind for kind, _ in rollouts]
        assert (kinds.count("EchoEnv"), kinds.count("QuizEnv")) == (6, 2), (step, rollouts)
        # The step is block `step` of the dataset (epochs repeat it), each row G=2 times.
        at = (step % 2) * block
        rows = data.select(range(at, at + block))
        expected = [
            (names[env], task)
            for env, task in zip(rows["environment"], rows["task_index"])
            for _ in range(2)
        ]
        assert rollouts == expected, (step, rollouts, expected)
    assert any(h.get("rewards/outcome_reward/mean") is not None for h in trainer.state.log_history)

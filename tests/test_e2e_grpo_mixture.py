"""A weighted mixture of two environments through a real GRPOTrainer on CPU (issue 35):
examples/echo_env.py and tests/envs/terminal_env.py (a quiz graded through a @terminal
tool), a dict ``environment_factory``, ``bundle_tasks(..., weights={"echo": 3, "quiz": 1},
block=B)`` with ``B`` TRL's unique prompts per generation and ``shuffle_dataset=False``.

Every step's rollouts split 3:1 exactly, and each step is one block of the dataset, in
order. The trainer's log holds every ``ors/*`` figure per environment (``ors/echo/...``,
``ors/quiz/...``, each environment's tools under it): each one what the step's rollouts of
that environment did, and the pooled figure their rollout-weighted mean. Nothing is
mocked: the rollouts reach real ORS servers, and what the trainer scored is read from the
environments it handed the reward function."""

from __future__ import annotations

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
from envs_ranks import train_mixture  # noqa: E402


@pytest.mark.timeout(600)
def test_every_step_splits_its_rollouts_by_the_weights(
    ors_servers: ors_server.Servers, echo_server: ors_server.RunningServer, tmp_path: Path
) -> None:
    quiz, quiz_server = served_package(ors_servers, QUIZ, tmp_path / "quiz_pkg")
    probe = EchoEnv(base_url=echo_server.url)  # no I/O: only its tool methods
    model_dir = tiny_model.build_tiny_model(
        tmp_path / "tiny",
        tools=[probe.echo, probe.hint],
        episodes=warm_up_episodes(echo_server.url, echo_tasks(base_url=echo_server.url)),
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

    steps: list[list[tuple[str, int | None]]] = []
    scored: list[dict[str, list[bool]]] = []  # per step, per environment: each rollout scored?

    def recording_reward(environments: Any, **kwargs: Any) -> list[float | None]:
        """outcome_reward itself, with each rollout's environment, task and verdict written
        down."""
        steps.append([(type(e).__name__, e.rollout.task_index) for e in environments])
        rewards = outcome_reward(environments, **kwargs)
        kinds: dict[str, list[bool]] = {}
        for e in environments:
            outcome = e.rollout.outcome()
            kinds.setdefault(str(outcome.environment), []).append(outcome.kind == "scored")
        scored.append(kinds)
        return rewards

    recording_reward.__name__ = outcome_reward.__name__
    # bundle_tasks({"echo": ..., "quiz": ...}, weights={"echo": 3, "quiz": 1}, block=block,
    # seed=0), and a GRPOTrainer with the dict environment_factory trained on it.
    trainer, data = train_mixture(
        model_dir, args, echo_server.url, quiz, quiz_server.url, recording_reward
    )
    # echo's 4 tasks at 3 a block and quiz's 2 at 1 a block: 2 blocks cover both.
    assert len(data) == 2 * block

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

    # Every ors/* figure per environment, each environment's tools under it, and the pooled
    # figure the rollout-weighted mean of the environments' (logging_steps=1: one entry a step).
    logged = [h for h in trainer.state.log_history if "ors/scored_frac" in h]
    assert len(logged) == 4, trainer.state.log_history
    for step, (entry, kinds) in enumerate(zip(logged, scored)):
        assert set(kinds) == {"echo", "quiz"}, kinds  # each rollout knew its environment
        for env in ("echo", "quiz"):
            assert entry[f"ors/{env}/scored_frac"] == sum(kinds[env]) / len(kinds[env]), step
            assert entry[f"ors/{env}/rollouts"] == len(kinds[env])
        assert entry["ors/echo/rollout_frac"] == 0.75 and entry["ors/quiz/rollout_frac"] == 0.25
        assert "ors/echo/tool/echo/calls_per_rollout" in entry  # the model's tools
        assert "ors/echo/tool/hint/calls_per_rollout" in entry
        assert "ors/quiz/tool/scratch/calls_per_rollout" in entry
        assert entry["ors/quiz/tool/submit/calls_per_rollout"] > 0  # the @terminal tool
        assert not any(k.startswith("ors/tool/") for k in entry)  # tools per environment only
        weighted = 0.75 * entry["ors/echo/scored_frac"] + 0.25 * entry["ors/quiz/scored_frac"]
        assert entry["ors/scored_frac"] == pytest.approx(weighted), entry
        for figure in ("failed_frac", "finished_frac", "calls_per_rollout", "pass@1"):
            weighted = sum(
                entry[f"ors/{e}/rollout_frac"] * entry[f"ors/{e}/{figure}"] for e in names
            )
            assert entry[f"ors/{figure}"] == pytest.approx(weighted), figure

"""Multi-environment bundles: one dataset for TRL's dict ``environment_factory``."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

import ors_server
from generated.echo import EchoEnv
from generated.echo import load_tasks as echo_tasks
from conftest import served_package
from orsgen.runtime.dataset import bundle_tasks

ROOT = Path(__file__).resolve().parents[1]
QUIZ = ROOT / "tests" / "envs" / "terminal_env.py"


@pytest.fixture(scope="module")
def quiz(
    ors_servers: ors_server.Servers, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Any, ors_server.RunningServer]:
    return served_package(ors_servers, QUIZ, tmp_path_factory.mktemp("bundle") / "quiz_pkg")


def test_bundle_rows_route_to_their_environment(echo_server: Any, quiz: Any) -> None:
    module, quiz_server = quiz
    data = bundle_tasks(
        {
            "echo": echo_tasks(base_url=echo_server.url),
            "quiz": module.load_tasks(base_url=quiz_server.url),
        }
    )
    assert data["environment"] == ["echo"] * 4 + ["quiz"] * 2
    assert data["task_index"] == [0, 1, 2, 3, 0, 1]
    assert data["target"][:4] == ["apple", "banana", "cherry", "damson"] and data["target"][4:] == [
        None,
        None,
    ]
    assert data["question"][4:] == ["6 x 7", "2 + 2"] and data["question"][:4] == [None] * 4
    # What TRL does with a dict environment_factory: pick the factory by the row's
    # environment and pass every other column to reset().
    factories = {
        "echo": functools.partial(EchoEnv, base_url=echo_server.url, prefetch=False),
        "quiz": functools.partial(module.QuizEnv, base_url=quiz_server.url, prefetch=False),
    }
    envs = []
    try:
        for row in data:
            env = factories[row["environment"]]()
            envs.append(env)
            prompt = env.reset(**{k: v for k, v in row.items() if k != "environment"})
            expected = row["target"] if row["environment"] == "echo" else row["question"]
            assert expected in prompt
        assert envs[0].echo(text="apple") == "echo: apple"
        completions = [[{"role": "assistant", "content": "x"}]] * 5 + [
            [{"role": "assistant", "content": "4"}]
        ]
        assert module.outcome_reward(envs, completions=completions) == [
            1.0,
            None,
            None,
            None,
            0.0,
            1.0,
        ]
    finally:
        EchoEnv.close_all()
        module.QuizEnv.close_all()


def test_bundle_refuses_a_metadata_environment_column(echo_server: Any) -> None:
    data = echo_tasks(base_url=echo_server.url).add_column("environment", ["x"] * 4)
    with pytest.raises(ValueError, match="include_metadata=False"):
        bundle_tasks({"echo": data})


@pytest.mark.usefixtures("fresh_runtime")
def test_a_weighted_environment_without_a_dataset_runs_its_own_curriculum(
    echo_server: Any, quiz: Any
) -> None:
    """What docs/several-environments.md promises: a dataset of ``None`` leaves the task to
    the environment, so its ``curriculum=`` chooses within the environment's share, while
    the other environment's rows open their own tasks. Driven as GRPOTrainer drives it:
    each row reset ``G`` times in a row (``RepeatSampler``), by the row's environment."""
    from generated.echo import outcome_reward
    from orsgen.runtime.choosing import tasks
    from orsgen.runtime.choosing.curriculum import PassRateCurriculum

    module, quiz_server = quiz
    tasks.samplers().clear()
    curriculum = PassRateCurriculum()
    data = bundle_tasks(
        {"echo": None, "quiz": module.load_tasks(base_url=quiz_server.url)},
        weights={"echo": 1, "quiz": 1},
        block=2,
        blocks=8,
    )
    groups = 2
    echo = [
        EchoEnv(base_url=echo_server.url, curriculum=curriculum, group_size=groups)
        for _ in range(groups)
    ]
    quizzes = [module.QuizEnv(base_url=quiz_server.url) for _ in range(groups)]
    chosen: list[list[int]] = []
    try:
        for row in data:
            columns = {k: v for k, v in row.items() if k != "environment"}  # as TRL does
            if row["environment"] == "quiz":
                for env in quizzes:
                    assert row["question"] in env.reset(**columns)
                continue
            for env in echo:
                env.reset(**columns)
                env.echo(text="apple")  # only task 0 wants it
            outcome_reward(echo)  # each settled rollout tells the curriculum
            chosen.append([env.rollout.task_index for env in echo])
    finally:
        EchoEnv.close_all()
        module.QuizEnv.close_all()
    assert len(chosen) == 8 and all(a == b for a, b in chosen)  # each group on one task
    assert sorted(a for a, _ in chosen[:4]) == [0, 1, 2, 3]  # the first pass: each task once
    assert [curriculum.pool(t) for t in range(4)] == ["solved"] + ["unsolved"] * 3

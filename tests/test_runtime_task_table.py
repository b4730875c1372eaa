"""Per-task visibility through the generated echo package's ``outcome_reward`` (issue 23):
each rollout's task goes to TRL's ``log_extra`` as completions-table columns, and every
batch a trainer scores feeds the per-task table that ``TaskTableCallback`` writes. Real
server; TRL's keywords are passed the way GRPOTrainer passes them."""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from generated.echo import EchoEnv
from generated.echo.rewards import outcome_reward
from orsgen.runtime.trajectories import task_table

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("fresh_runtime")]


@pytest.fixture(autouse=True)
def _empty_table() -> None:
    task_table.table().clear()


def _batch(url: str) -> list[EchoEnv]:
    """Task 0 solved, task 1 answered wrong, task 1 never answered (unfinished)."""
    envs = [EchoEnv(base_url=url, prefetch=False) for _ in range(3)]
    envs[0].reset(task_index=0)
    envs[0].echo(text="apple")
    envs[1].reset(task_index=1)
    envs[1].echo(text="cherry")
    envs[2].reset(task_index=1)
    envs[2].hint()
    return envs


def test_each_rollouts_task_reaches_the_completions_table(echo_server) -> None:  # type: ignore[no-untyped-def]
    extra: dict[str, list[Any]] = {}
    envs = _batch(echo_server.url)
    try:
        rewards = outcome_reward(
            envs + ["not an ORS adapter"],
            [[]] * 4,
            log_extra=lambda column, values: extra.setdefault(column, []).extend(values),
            trainer_state=SimpleNamespace(global_step=4),
        )
    finally:
        for env in envs:
            env.close()
    assert rewards == [1.0, 0.0, None, None]
    assert extra == {"task_index": [0, 1, 1, None], "task_split": ["train"] * 3 + [None]}


def test_the_task_table_counts_scored_rollouts_only(echo_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from orsgen.runtime.task_callback import TaskTableCallback

    envs = _batch(echo_server.url)
    try:
        outcome_reward(envs[:1], [[]])  # the user's own scoring before training: not counted
        outcome_reward(envs, [[]] * 3, trainer_state=SimpleNamespace(global_step=0))
        outcome_reward(envs[1:2], [[]], trainer_state=SimpleNamespace(global_step=6))
    finally:
        for env in envs:
            env.close()
    callback = TaskTableCallback()
    args = SimpleNamespace(output_dir=str(tmp_path / "out"))
    callback.on_log(args, SimpleNamespace(), SimpleNamespace())
    with (tmp_path / "out" / "ors_tasks.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert rows == [
        {"split": "train", "task_index": "0", "rollouts": "1", "scored": "1",
         "pass_rate": "1.0", "mean_reward": "1.0", "last_step": "1"},
        {"split": "train", "task_index": "1", "rollouts": "3", "scored": "2",
         "pass_rate": "0.0", "mean_reward": "0.0", "last_step": "7"},
    ]  # fmt: skip

"""A ``load_tasks(split=...)`` row opens its own split in ``reset(**row)`` (issue 22): rows
carry a ``split`` column, which TRL passes to ``reset`` with every other column. The
words come from tests/envs/chance_env.py, whose ``train`` and ``test`` splits differ."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest

import ors_server
from conftest import ENVS

CHANCE_ENV = ENVS / "chance_env.py"
TRAIN_WORDS = ["apple", "banana"]
TEST_WORDS = ["cherry", "damson", "elder", "fig"]

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def chance_server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(CHANCE_ENV)


@pytest.fixture(scope="module")
def chance_pkg(
    chance_server: ors_server.RunningServer, generate_package: Callable[..., ModuleType]
) -> ModuleType:
    return generate_package("chance_split", chance_server.url, class_name="ChanceEnv")


def test_a_test_row_opens_the_test_task(chance_pkg, chance_server) -> None:
    rows = chance_pkg.load_tasks(split="test", base_url=chance_server.url)
    assert rows["split"] == ["test"] * len(TEST_WORDS)
    env = chance_pkg.ChanceEnv(base_url=chance_server.url)
    try:
        for row, word in zip(rows, TEST_WORDS):
            assert word in env.reset(**row)
    finally:
        env.close()


def test_a_row_without_a_split_keeps_the_adapters_split(chance_pkg, chance_server) -> None:
    env = chance_pkg.ChanceEnv(base_url=chance_server.url)
    test_env = chance_pkg.ChanceEnv(base_url=chance_server.url, split="test")
    try:
        assert TRAIN_WORDS[1] in env.reset(task_index=1)
        assert TEST_WORDS[1] in test_env.reset(task_index=1)
        # The same adapter then goes back to its own split for a row without one.
        assert TEST_WORDS[0] in env.reset(task_index=0, split="test")
        assert TRAIN_WORDS[0] in env.reset(task_index=0)
    finally:
        env.close()
        test_env.close()


def test_bundled_rows_keep_their_splits(chance_pkg, chance_server) -> None:
    from orsgen.runtime.dataset import bundle_tasks

    url = chance_server.url
    bundle = bundle_tasks(
        {
            "held_out": chance_pkg.load_tasks(split="test", num_tasks=2, base_url=url),
            "training": chance_pkg.load_tasks(split="train", base_url=url),
        }
    )
    assert bundle["split"] == ["test", "test", "train", "train"]
    env = chance_pkg.ChanceEnv(base_url=url)
    try:
        seen = []
        for row in bundle:
            columns = {k: v for k, v in row.items() if k != "environment"}  # as TRL does
            seen.append(env.reset(**columns))
    finally:
        env.close()
    for prompt, word in zip(seen, TEST_WORDS[:2] + TRAIN_WORDS):
        assert word in prompt

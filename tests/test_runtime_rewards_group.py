"""ORS group judging: group_reward asks the environment to judge each GRPO group once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import ors_server
from conftest import served_package
from generated.echo import EchoEnv, group_reward

ROOT = Path(__file__).resolve().parents[1]
JUDGE = ROOT / "tests" / "envs" / "judge_env.py"


@pytest.fixture(scope="module")
def judge(
    ors_servers: ors_server.Servers, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Any, ors_server.RunningServer]:
    return served_package(ors_servers, JUDGE, tmp_path_factory.mktemp("judge") / "judge_pkg")


def _answer(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


def test_each_group_is_judged_once(judge: Any) -> None:
    module, server = judge
    assert module.JudgeEnv.SUPPORTS_SCORE_GROUP is True
    envs = [module.JudgeEnv(base_url=server.url, prefetch=False) for _ in range(5)]
    try:
        for env, task in zip(envs, [0, 0, 0, 1, 1]):
            env.reset(task_index=task)
        server.reset_counts()
        completions = [
            _answer("apple"),
            _answer("ape"),
            _answer("xyz"),
            _answer("banana"),
            _answer("nab"),
        ]
        rewards = module.group_reward(envs, completions=completions)
        # apple: {a,p,l,e}; "ape" has 3 of 4 letters; banana: {b,a,n}; "nab" has all 3.
        assert rewards == [1.0, 0.75, 0.0, 1.0, 1.0]
        assert server.requests().get("POST /judgeenv/score_group", 0) == 2  # one per group
        # Pointwise rewards are untouched: nothing scored these rollouts.
        assert module.outcome_reward(envs) == [None] * 5
    finally:
        module.JudgeEnv.close_all()
    assert server.wait_sessions(0) == 0


def test_environments_without_a_judge_get_none(echo_server: Any) -> None:
    assert EchoEnv.SUPPORTS_SCORE_GROUP is False
    env = EchoEnv(base_url=echo_server.url, prefetch=False)
    try:
        env.reset(task_index=0)
        judged = lambda: sum(
            n for path, n in echo_server.requests().items() if "score_group" in path
        )  # noqa: E731
        before = judged()
        assert group_reward([env], completions=[_answer("apple")]) == [None]
        assert judged() == before  # nothing was sent
    finally:
        env.close()


def test_no_completions_no_requests(judge: Any) -> None:
    module, server = judge
    env = module.JudgeEnv(base_url=server.url, prefetch=False)
    try:
        env.reset(task_index=0)
        server.reset_counts()
        assert module.group_reward([env]) == [None]
        assert server.requests().get("POST /judgeenv/score_group", 0) == 0
    finally:
        env.close()

"""The adapter's ``curriculum=`` keyword against a real coinenv server (bench/coin_env.py:
tasks 0-6 always pass, 7-13 never, 14-19 half the time), through the generated package
(bench/coinenv): settled outcomes reach the curriculum from ``outcome_reward`` and from
``get_reward()``, unscored rollouts are not failures, and ``ors/curriculum/*`` reach
TRL's ``log_metric``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import ors_server
from conftest import import_generated
from orsgen.runtime.config import AdapterConfig
from orsgen.runtime.rollouts import tasks
from orsgen.runtime.rollouts.curriculum import PassRateCurriculum

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("fresh_runtime")]

ROOT = Path(__file__).resolve().parents[1]
COIN_ENV = ROOT / "bench" / "coin_env.py"
PLACEHOLDER = {"prompt": [{"role": "user", "content": ""}]}  # TRL's row with no dataset
ANSWER = [{"role": "assistant", "content": "yes"}]


@pytest.fixture(autouse=True)
def _fresh_choosers() -> None:
    tasks.samplers().clear()


@pytest.fixture(scope="module")
def server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(COIN_ENV)


@pytest.fixture(scope="module")
def coinenv() -> Any:
    return import_generated(ROOT / "bench" / "coinenv")


def test_outcome_reward_feeds_the_curriculum_and_the_log(server, coinenv) -> None:  # type: ignore[no-untyped-def]
    curriculum = PassRateCurriculum()
    envs = [
        coinenv.CoinEnv(base_url=server.url, group_size=2, seed=1, curriculum=curriculum)
        for _ in range(2)
    ]
    logged: dict[str, list[float]] = {}
    try:
        for _group in range(20):  # the first pass: every task once
            for env in envs:
                env.reset(**PLACEHOLDER)
            coinenv.outcome_reward(
                envs,
                completions=[ANSWER, ANSWER],
                log_metric=lambda k, v: logged.setdefault(k, []).append(v),
            )
    finally:
        for env in envs:
            env.close()
    assert [curriculum.pool(t) for t in range(7)] == ["solved"] * 7
    assert [curriculum.pool(t) for t in range(7, 14)] == ["unsolved"] * 7
    assert curriculum.pools()["unseen"] == 0
    assert logged["ors/curriculum/rollouts_unseen_frac"] == [1.0] * 20
    assert logged["ors/curriculum/tasks_unseen"][-1] == 0.0
    assert len(logged["ors/curriculum/zero_var_frac"]) == 20


def test_unscored_rollouts_are_not_failures(server, coinenv) -> None:  # type: ignore[no-untyped-def]
    curriculum = PassRateCurriculum()
    env = coinenv.CoinEnv(base_url=server.url, group_size=1, curriculum=curriculum)
    try:
        env.reset(**PLACEHOLDER)
        coinenv.outcome_reward([env])  # no completion: nothing answered, unfinished
    finally:
        env.close()
    assert curriculum.pools()["unseen"] == 20
    assert curriculum.state_dict()["history"] == []


def test_get_reward_feeds_the_curriculum(server, coinenv) -> None:  # type: ignore[no-untyped-def]
    curriculum = PassRateCurriculum()
    env = coinenv.ScoredCoinEnv(base_url=server.url, group_size=1, curriculum=curriculum)
    try:
        env.reset(**PLACEHOLDER)
        env.rollout.submit_final("yes")
        reward = env.get_reward()
    finally:
        env.close()
    task = curriculum.state_dict()["plan"][0][1]
    assert reward in (0.0, 1.0)
    assert curriculum.state_dict()["history"] == [[0, task, [reward]]]


def test_the_keyword_is_checked_at_construction(coinenv) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="curriculum must be"):
        coinenv.CoinEnv(base_url="http://127.0.0.1:9", curriculum="hardest_first")
    coinenv.CoinEnv(base_url="http://127.0.0.1:9", curriculum="uniform")  # today's default


def test_curriculum_is_the_sampler_shorthand(coinenv) -> None:  # type: ignore[no-untyped-def]
    """curriculum= selects the sampler factory; naming a sampler too is refused."""
    with pytest.raises(ValueError, match="sampler= or curriculum=, not both"):
        coinenv.CoinEnv(
            base_url="http://127.0.0.1:9", curriculum="pass_rate", sampler=tasks.Chooser
        )
    led = AdapterConfig.of(coinenv.CoinEnv, base_url="http://127.0.0.1:9", curriculum="pass_rate")
    made = led.tasks.sampler([3, 4, 5], 0, 2)
    assert isinstance(made, tasks.Chooser) and isinstance(made.curriculum, PassRateCurriculum)
    uniform = AdapterConfig.of(coinenv.CoinEnv, base_url="http://127.0.0.1:9")
    assert uniform.tasks.sampler is tasks.Chooser

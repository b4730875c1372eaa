"""The adapter's ``curriculum=`` keyword against a real coinenv server (bench/coin_env.py:
tasks 0-6 always pass, 7-13 never, 14-19 half the time), through the generated package
(bench/coinenv): settled outcomes reach the curriculum from ``outcome_reward`` and from
``get_reward()``, unscored rollouts are not failures, and ``ors/curriculum/*`` reach
TRL's ``log_metric``."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import ors_server
from conftest import import_generated
from orsgen.runtime.checkpoint import CurriculumCheckpoint, path
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


def _save_args(output_dir: Path, step: int) -> tuple[Any, Any]:
    """The two objects transformers hands a callback that this one reads."""
    return SimpleNamespace(output_dir=str(output_dir)), SimpleNamespace(
        global_step=step, is_world_process_zero=True
    )


def _groups(coinenv: Any, envs: list[Any], count: int) -> None:
    for _group in range(count):
        for env in envs:
            env.reset(**PLACEHOLDER)
        coinenv.outcome_reward(envs, completions=[ANSWER] * len(envs))


def test_the_callback_with_no_object_saves_and_restores_the_named_curriculum(  # type: ignore[no-untyped-def]
    server, coinenv, tmp_path: Path
) -> None:
    """curriculum="pass_rate" with CurriculumCheckpoint(): the save holds the stream's
    curriculum, and a resume (before any reset) hands it to the stream made next."""
    args, state = _save_args(tmp_path, 5)
    make = lambda: coinenv.CoinEnv(  # noqa: E731
        base_url=server.url, group_size=2, seed=1, curriculum="pass_rate"
    )
    envs = [make(), make()]
    try:
        _groups(coinenv, envs, 5)
        (chooser,) = tasks.samplers().all()
        assert isinstance(chooser, tasks.Chooser) and chooser.curriculum is not None
        CurriculumCheckpoint().on_save(args, state, None)
        saved = json.loads(path(tmp_path, 5).read_text())
        assert saved == chooser.curriculum.state_dict()
        assert len(saved["history"]) == 5
    finally:
        for env in envs:
            env.close()
    tasks.samplers().clear()  # a new process: no stream yet
    resuming = CurriculumCheckpoint()
    resuming.on_train_begin(args, state, None)
    assert resuming.restored_from == path(tmp_path, 5)
    env = make()
    try:
        env.reset(**PLACEHOLDER)
        (chooser,) = tasks.samplers().all()
        assert isinstance(chooser, tasks.Chooser) and chooser.curriculum is not None
        resumed = chooser.curriculum.state_dict()
    finally:
        env.close()
    assert resumed["history"] == saved["history"]
    assert resumed["planned"] == saved["planned"] + 1  # the first reset chose group 5
    assert tasks.samplers().take_resumed() is None


def test_the_callback_with_no_object_refuses_to_guess_between_curricula(  # type: ignore[no-untyped-def]
    server, coinenv, tmp_path: Path
) -> None:
    envs = [
        coinenv.CoinEnv(base_url=server.url, group_size=1, curriculum="pass_rate"),
        coinenv.ScoredCoinEnv(base_url=server.url, group_size=1, curriculum="pass_rate"),
    ]
    try:
        for env in envs:
            env.reset(**PLACEHOLDER)
        with pytest.raises(ValueError, match="cannot tell which curriculum to save.* 2 "):
            CurriculumCheckpoint().on_save(*_save_args(tmp_path, 1), None)
    finally:
        for env in envs:
            env.close()
    assert not path(tmp_path, 1).exists()


def test_the_callback_says_when_there_is_no_curriculum_to_save(  # type: ignore[no-untyped-def]
    server, coinenv, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = coinenv.CoinEnv(base_url=server.url, group_size=1)  # uniform passes
    callback = CurriculumCheckpoint()
    try:
        env.reset(**PLACEHOLDER)
        with caplog.at_level("WARNING", logger="orsgen.runtime"):
            callback.on_save(*_save_args(tmp_path, 1), None)
            callback.on_save(*_save_args(tmp_path, 2), None)
    finally:
        env.close()
    said = [r.getMessage() for r in caplog.records if "CurriculumCheckpoint" in r.getMessage()]
    assert len(said) == 1 and "no curriculum state is saved" in said[0], said
    assert not path(tmp_path, 1).exists() and not path(tmp_path, 2).exists()

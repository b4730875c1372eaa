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
from orsgen.runtime.choosing.checkpoint import CurriculumCheckpoint, path
from orsgen.runtime.choosing import tasks
from orsgen.runtime.choosing.curriculum import PassRateCurriculum
from orsgen.runtime.config import AdapterConfig

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
    made = led.tasks.sampler([3, 4, 5], 0, 2, 0.5)
    assert isinstance(made, tasks.Chooser) and isinstance(made.curriculum, PassRateCurriculum)
    assert made.curriculum.threshold == 0.5
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


def _chosen_next(envs: list[Any]) -> list[int | None]:
    """One group on every adapter: the task each stream chose."""
    for env in envs:
        env.reset(**PLACEHOLDER)
    return [env.rollout.task_index for env in envs]


def test_every_stream_is_saved_under_its_key_and_resumes_where_it_was(  # type: ignore[no-untyped-def]
    server, coinenv, tmp_path: Path
) -> None:
    """Two streams in one process (issue 29, item 3): a curriculum="pass_rate" one and a
    uniform one. The checkpoint holds both, each under (class, server, split); a new
    process resumes each from its own state: the curriculum's history, and the uniform
    passes at the group where they were (not at pass 0)."""
    args, state = _save_args(tmp_path, 5)
    makes = [
        lambda: coinenv.CoinEnv(base_url=server.url, group_size=1, seed=1, curriculum="pass_rate"),
        lambda: coinenv.ScoredCoinEnv(base_url=server.url, group_size=1, seed=1),
    ]
    envs = [make() for make in makes]
    try:
        for _group in range(25):  # past the first uniform pass of 20
            for env in envs:
                env.reset(**PLACEHOLDER)
            coinenv.outcome_reward(envs, completions=[ANSWER] * 2)
        CurriculumCheckpoint().on_save(args, state, None)
        expected = _chosen_next(envs)
    finally:
        for env in envs:
            env.close()
    saved = json.loads(path(tmp_path, 5).read_text())
    keys = [s["stream"] for s in saved["streams"]]
    assert [k["class"].rsplit(".", 1)[-1] for k in keys] == ["CoinEnv", "ScoredCoinEnv"]
    assert all(k["split"] == "train" and server.url in k["server"] for k in keys)
    assert saved["streams"][0]["state"]["curriculum"]["planned"] == 25
    assert saved["streams"][1]["state"]["given"] == 25

    tasks.samplers().clear()  # a new process: no stream yet
    resuming = CurriculumCheckpoint()
    resuming.on_train_begin(args, state, None)
    assert resuming.restored_from == path(tmp_path, 5)
    envs = [make() for make in makes]
    try:
        assert _chosen_next(envs) == expected
        found = {type(s.curriculum).__name__: s for s in tasks.samplers().all()}  # type: ignore[attr-defined]
    finally:
        for env in envs:
            env.close()
    assert found["PassRateCurriculum"].curriculum.state_dict()["history"] == (  # type: ignore[attr-defined]
        saved["streams"][0]["state"]["curriculum"]["history"]
    )


def test_two_streams_under_one_key_are_refused(server, coinenv, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    envs = [
        coinenv.CoinEnv(base_url=server.url, group_size=1, seed=seed, curriculum="pass_rate")
        for seed in (1, 2)
    ]
    try:
        for env in envs:
            env.reset(**PLACEHOLDER)
        with pytest.raises(ValueError, match="CoinEnv on .* chooses tasks in two streams"):
            CurriculumCheckpoint().on_save(*_save_args(tmp_path, 1), None)
    finally:
        for env in envs:
            env.close()
    assert not path(tmp_path, 1).exists()


def test_with_no_stream_the_checkpoint_still_resumes(  # type: ignore[no-untyped-def]
    server, coinenv, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A run whose adapters never chose a task (train_dataset given) saves a file with no
    stream, says so once, and resumes from it (the old callback wrote nothing, and the
    resume then raised FileNotFoundError)."""
    env = coinenv.CoinEnv(base_url=server.url, group_size=1)
    callback = CurriculumCheckpoint()
    try:
        env.reset(task_index=3)
        with caplog.at_level("WARNING", logger="orsgen.runtime"):
            callback.on_save(*_save_args(tmp_path, 1), None)
            callback.on_save(*_save_args(tmp_path, 2), None)
    finally:
        env.close()
    said = [r.getMessage() for r in caplog.records if "CurriculumCheckpoint" in r.getMessage()]
    assert len(said) == 1 and "hold no task-choice state" in said[0], said
    assert json.loads(path(tmp_path, 2).read_text())["streams"] == []
    CurriculumCheckpoint().on_train_begin(*_save_args(tmp_path, 2), None)


def test_a_resumed_curriculum_is_loaded_once(server, coinenv, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``CurriculumCheckpoint(curriculum)`` and the adapters' ``curriculum=`` share one
    object: a resume loads the saved state into it once, when its stream is made (it was
    loaded at train begin, then again by the stream)."""
    args, state = _save_args(tmp_path, 3)

    def make(curriculum: PassRateCurriculum) -> Any:
        return coinenv.CoinEnv(base_url=server.url, group_size=1, seed=1, curriculum=curriculum)

    first = PassRateCurriculum()
    env = make(first)
    try:
        _groups(coinenv, [env], 5)
        CurriculumCheckpoint(first).on_save(args, state, None)
        expected = _chosen_next([env])
    finally:
        env.close()
    loads: list[Any] = []

    class Counting(PassRateCurriculum):
        def load_state_dict(self, saved: Any) -> None:
            loads.append(saved)
            super().load_state_dict(saved)

    tasks.samplers().clear()  # a new process: no stream yet
    resumed = Counting()
    CurriculumCheckpoint(resumed).on_train_begin(args, state, None)
    env = make(resumed)
    try:
        assert _chosen_next([env]) == expected
    finally:
        env.close()
    (stream,) = json.loads(path(tmp_path, 3).read_text())["streams"]
    assert loads == [stream["state"]["curriculum"]]

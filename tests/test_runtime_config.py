"""AdapterConfig: every constructor keyword checked once into one frozen, picklable
object, through the generated class as a user builds it (no server needed: constructing
does no I/O)."""

from __future__ import annotations

import dataclasses
import functools
import pickle

import pytest

from generated.echo import EchoEnv
from orsgen.runtime.config import AdapterConfig, AdapterSettings
from orsgen.runtime.trajectories.writer import JsonlFile


def test_every_keyword_lands_in_one_frozen_config() -> None:
    env = EchoEnv(
        base_url="http://127.0.0.1:9/",
        split="test",
        timeout=5,
        open_timeout=7,
        group_size=4,
        keepalive=3,
        strict=True,
        reconnect_for=11,
        env_overrides={"A": "secret-value"},
        max_sessions=2,
        rollout_timeout=9,
        seed=3,
        num_tasks=5,
        unfinished_reward=-1,
        trajectories="runs/x.jsonl",
    )
    config = env._config
    sessions, rollouts, tasks = config.sessions, config.rollouts, config.tasks
    assert sessions.endpoint.session_url == "http://127.0.0.1:9"
    assert (sessions.split, sessions.open_timeout, sessions.keepalive) == ("test", 7.0, 3)
    assert (sessions.strict, sessions.reconnect_for, sessions.max_sessions) == (True, 11.0, 2)
    assert sessions.prefetch_group == 4 and tasks.group_size == 4
    assert (rollouts.timeout, rollouts.rollout_timeout) == (5.0, 9)
    assert rollouts.unfinished_reward == -1.0
    assert rollouts.trajectories == JsonlFile("runs/x.jsonl")
    assert (tasks.seed, tasks.num_tasks, tasks.indices) == (3, 5, None)
    assert "secret-value" not in repr(config)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.tasks = tasks  # type: ignore[misc]


def test_prefetch_false_is_a_group_of_one_but_keeps_the_task_group() -> None:
    config = EchoEnv(base_url="http://127.0.0.1:9/", group_size=8, prefetch=False)._config
    assert config.sessions.prefetch_group == 1 and config.tasks.group_size == 8


def test_the_config_pickles_and_builds_an_equal_adapter() -> None:
    config = AdapterConfig.of(EchoEnv, base_url="http://127.0.0.1:9/", timeout=5, seed=1)
    clone = pickle.loads(pickle.dumps(config))
    assert clone.rollouts == config.rollouts and clone.tasks == config.tasks
    assert clone.sessions.endpoint == config.sessions.endpoint
    env = EchoEnv(config=clone)
    assert env._config is clone
    factory = pickle.loads(pickle.dumps(functools.partial(EchoEnv, config=config)))
    assert factory()._config.rollouts.timeout == 5.0


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"group_size": 0}, "group_size must be at least 1"),
        ({"keepalive": 0}, "keepalive must be positive"),
        ({"reconnect_for": -1}, "reconnect_for must be non-negative"),
        ({"max_sessions": 0}, "max_sessions must be at least 1"),
        ({"rollout_timeout": 0}, "rollout_timeout must be positive"),
        ({"num_tasks": 2, "indices": [0]}, "pass num_tasks or indices, not both"),
        ({"env_overrides": {"A": 1}}, "env_overrides['A'] must map a str name"),
    ],
)
def test_a_bad_setting_is_refused_at_construction(settings: AdapterSettings, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message.replace("[", r"\[")):
        EchoEnv(base_url="http://127.0.0.1:9/", **settings)


def test_an_unknown_keyword_or_both_forms_are_refused() -> None:
    with pytest.raises(TypeError, match="unexpected keyword.*timout"):
        EchoEnv(timout=5)  # type: ignore[call-arg]
    config = AdapterConfig.of(EchoEnv, base_url="http://127.0.0.1:9/")
    with pytest.raises(TypeError, match="not both"):
        EchoEnv(config=config, timeout=5)

"""A deadline per rollout (issue 18): ``rollout_timeout`` seconds after ``reset()``, tool calls
answer without a round trip and the episode ends unfinished (``unfinished_reward``, ``None``
by default), whatever scored before.

A real echo ORS server of this file's own, whose request counts (``/{env}/_stats``) show that
no call went out after the deadline. The deadline runs on the adapter's injected ``clock``,
so the tests move time forward instead of sleeping.
"""

from __future__ import annotations

from collections.abc import Iterator

import ors_server
import pytest
from conftest import ECHO_ENV, said

from generated.echo import EchoEnv, outcome_reward
from orsgen.runtime.errors import ToolInputError

pytestmark = [pytest.mark.usefixtures("fresh_runtime"), pytest.mark.timeout(120)]

CALL = "POST /echoenv/call"
LIMIT = "the rollout's time limit"


class Clock:
    """A monotonic clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(scope="module")
def server(ors_servers: ors_server.Servers) -> Iterator[ors_server.RunningServer]:
    yield ors_servers.own(ECHO_ENV)


def test_after_the_deadline_a_call_ends_the_rollout_without_a_round_trip(
    server: ors_server.RunningServer,
) -> None:
    clock = Clock()
    env = EchoEnv(base_url=server.url, prefetch=False, rollout_timeout=1.0, clock=clock)
    try:
        env.reset(task_index=0)
        assert env.echo(text="pear") == "echo: pear"  # before the deadline: a real call
        clock.advance(1.5)
        server.reset_counts()
        out = said(lambda: env.echo(text="apple"))
        assert LIMIT in out, out
        assert "1 s" in out and "passed" in out
        assert server.requests().get(CALL, 0) == 0
        assert env.finished
        assert outcome_reward([env]) == [None]  # cut short: unscored, even after an earlier 0.0
        assert LIMIT in said(lambda: env.echo(text="apple"))
        assert server.requests().get(CALL, 0) == 0
    finally:
        EchoEnv.close_all()


def test_the_deadline_restarts_at_every_reset(server: ors_server.RunningServer) -> None:
    clock = Clock()
    env = EchoEnv(base_url=server.url, prefetch=False, rollout_timeout=1.0, clock=clock)
    try:
        env.reset(task_index=0)
        clock.advance(1.5)
        assert LIMIT in said(lambda: env.echo(text="apple"))
        env.reset(task_index=0)
        env.echo(text="apple")
        assert outcome_reward([env]) == [1.0]
    finally:
        EchoEnv.close_all()


def test_a_rollout_cut_by_its_deadline_is_unfinished_and_gets_unfinished_reward(
    server: ors_server.RunningServer,
) -> None:
    clock = Clock()
    env = EchoEnv(
        base_url=server.url,
        prefetch=False,
        rollout_timeout=1.0,
        unfinished_reward=-1.0,
        clock=clock,
    )
    try:
        env.reset(task_index=0)
        env.echo(text="pear")  # a wrong answer the environment scores 0.0
        clock.advance(1.5)
        with pytest.raises(ToolInputError) as raised:
            env.echo(text="apple")
        assert raised.value.reason == "time_limit"
        assert not raised.value.environment_failed
        outcome = env.rollout.outcome()
        assert (outcome.kind, outcome.reason) == ("unfinished", "rollout_timeout passed")
        assert outcome_reward([env]) == [-1.0]
    finally:
        EchoEnv.close_all()


def test_rollout_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="rollout_timeout"):
        EchoEnv(base_url="http://127.0.0.1:9", rollout_timeout=0)


def test_just_before_the_deadline_a_call_still_goes_out(server: ors_server.RunningServer) -> None:
    clock = Clock()
    env = EchoEnv(base_url=server.url, prefetch=False, rollout_timeout=1.0, clock=clock)
    try:
        env.reset(task_index=0)
        clock.advance(0.9)
        server.reset_counts()
        assert env.echo(text="apple") == "echo: apple"
        assert server.requests().get(CALL, 0) == 1
        assert outcome_reward([env]) == [1.0]
    finally:
        EchoEnv.close_all()

"""Each ``ors/*`` figure counts exactly the rollouts of its reward batch (issue 23): calls,
failures, seconds and resets of adapters that no reward settled (a scratch adapter, a
rollout abandoned before scoring) count nowhere. Through the generated echo package and
a real server."""

from __future__ import annotations

import pytest

from conftest import failed
from generated.echo import EchoEnv, ScoredEchoEnv
from generated.echo.rewards import outcome_reward
from orsgen.runtime.records import metrics

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("fresh_runtime")]


@pytest.fixture(autouse=True)
def _empty_window() -> None:
    metrics.counts().drain()


def _scratch(url: str) -> None:
    """What a user does before training: 16 hint() calls and 3 of the model's mistakes on
    a scratch adapter, closed, never scored."""
    scratch = EchoEnv(base_url=url, prefetch=False)
    try:
        scratch.reset(task_index=0)
        for _ in range(16):
            scratch.hint()
        for _ in range(3):
            failed(scratch._call, "echo", {"text": 7})
    finally:
        scratch.close()


def _one_rollout(env: EchoEnv) -> None:
    env.reset(task_index=0)
    env.echo(text="apple")


def test_a_step_counts_only_its_own_rollouts_calls(echo_server) -> None:  # type: ignore[no-untyped-def]
    _scratch(echo_server.url)
    env = EchoEnv(base_url=echo_server.url, prefetch=False)
    step: dict[str, float] = {}
    try:
        _one_rollout(env)
        outcome_reward([env], [[]], log_metric=step.__setitem__)
        outcome = env.rollout.outcome()
    finally:
        env.close()
    assert step["ors/rollouts"] == 1.0
    assert step["ors/calls_per_rollout"] == 1.0  # was 20.0: the scratch calls counted too
    assert step["ors/tool_error_frac"] == 0.0  # was 3/20
    assert step["ors/model_error_frac"] == 0.0 and step["ors/env_error_frac"] == 0.0
    own = outcome.usage
    assert own.resets == 1 and own.calls == 1
    assert step["ors/reset_s"] == own.reset_seconds  # the batch's one reset, not a mean of two
    assert step["ors/tool_call_s"] == own.call_seconds


def test_an_abandoned_rollout_is_not_in_the_next_step(echo_server) -> None:  # type: ignore[no-untyped-def]
    env = EchoEnv(base_url=echo_server.url, prefetch=False)
    step: dict[str, float] = {}
    try:
        env.reset(task_index=0)
        env.hint()
        env.hint()  # then reset again without scoring: the first rollout is abandoned
        _one_rollout(env)
        outcome_reward([env], [[]], log_metric=step.__setitem__)
    finally:
        env.close()
    assert step["ors/calls_per_rollout"] == 1.0
    assert step["ors/rollouts"] == 1.0


def test_get_reward_windows_count_their_own_rollouts(echo_server) -> None:  # type: ignore[no-untyped-def]
    """AsyncGRPO's path: get_reward() counts its rollout in the window a drain returns."""
    _scratch(echo_server.url)
    env = ScoredEchoEnv(base_url=echo_server.url, prefetch=False)
    try:
        _one_rollout(env)
        assert env.get_reward() == 1.0
    finally:
        env.close()
    rates = metrics.counts().drain_rates()
    assert rates["ors/calls_per_rollout"] == (1.0, 1.0)
    assert rates["ors/tool_error_frac"] == (0.0, 1.0)
    reset_s = rates["ors/reset_s"]
    assert isinstance(reset_s, tuple) and reset_s[1] == 1.0

"""Rollout outcomes and the ``unfinished_reward`` policy (orsgen/runtime/records/episode.py), read
through ``outcome_reward`` and ``get_reward()`` on real trustenv sessions.

- scored: the environment's last non-null reward (0.0 is a score);
- unfinished (the session worked, nothing scored): ``unfinished_reward``;
- failed (the grader or the tool raised on the server, a lost session, ...): ``None``,
  whatever ``unfinished_reward`` says.
"""

from __future__ import annotations

import functools
import pickle

import ors_server
import pytest
from conftest import failed
from envs.trust_support import TRUST_ENV, ScoredTrustAdapter, TrustAdapter

from orsgen.runtime.records.episode import Episode, classify
from orsgen.runtime.rewards import outcome_reward

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("fresh_runtime")]

OK, CRASH, BREAK = 0, 1, 4  # trust_env.py: task 1's grader crashes, task 4's calls break


@pytest.fixture(scope="module")
def server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(TRUST_ENV)


def _rollouts(
    url: str, unfinished_reward: float | None, cls: type = TrustAdapter
) -> dict[str, TrustAdapter]:
    """One rollout per kind of ending, on real sessions."""
    envs = {
        k: cls(base_url=url, prefetch=False, unfinished_reward=unfinished_reward)
        for k in ("right", "wrong", "no_call", "hints_only", "invalid_only", "crash", "break")
    }
    envs["right"].reset(task_index=OK)
    envs["right"].echo(text="apple")
    envs["wrong"].reset(task_index=OK)
    envs["wrong"].echo(text="pear")  # a wrong answer the environment scores 0.0
    envs["no_call"].reset(task_index=OK)
    envs["hints_only"].reset(task_index=OK)
    envs["hints_only"].hint()
    envs["invalid_only"].reset(task_index=OK)
    failed(envs["invalid_only"]._call, "echo", {"text": 5})  # the model's own mistake
    envs["crash"].reset(task_index=CRASH)
    failed(envs["crash"].echo, text="banana")
    envs["break"].reset(task_index=BREAK)
    failed(envs["break"].echo, text="elder")
    return envs


def _close(envs: dict[str, TrustAdapter]) -> None:
    for env in envs.values():
        env.close()


@pytest.mark.parametrize("setting", [None, -1.0, 0.0])
def test_outcome_reward_applies_the_policy(server, setting) -> None:  # type: ignore[no-untyped-def]
    envs = _rollouts(server.url, setting)
    try:
        got = dict(zip(envs, outcome_reward(list(envs.values()))))
        kinds = {k: e.rollout.outcome().kind for k, e in envs.items()}
    finally:
        _close(envs)
    assert got["right"] == 1.0 and got["wrong"] == 0.0
    for k in ("no_call", "hints_only", "invalid_only"):
        assert got[k] == setting, (k, got)
        assert kinds[k] == "unfinished"
    # A grader crash and a broken call are the environment's: never the unfinished reward.
    assert got["crash"] is None and got["break"] is None
    assert kinds["crash"] == kinds["break"] == "failed"


def test_get_reward_honours_it_too_and_partial_carries_it(server) -> None:  # type: ignore[no-untyped-def]
    factory = pickle.loads(
        pickle.dumps(functools.partial(ScoredTrustAdapter, unfinished_reward=-0.5))
    )
    assert factory.keywords["unfinished_reward"] == -0.5
    env, crashed = factory(base_url=server.url, prefetch=False), factory(
        base_url=server.url, prefetch=False
    )
    try:
        env.reset(task_index=OK)
        env.hint()
        assert env.get_reward() == -0.5
        crashed.reset(task_index=CRASH)
        failed(crashed.echo, text="banana")
        assert crashed.get_reward() is None
    finally:
        env.close()
        crashed.close()


def test_why_a_rollout_is_unscored(server) -> None:  # type: ignore[no-untyped-def]
    envs = _rollouts(server.url, None)
    try:
        reasons = {k: e.rollout.outcome().reason for k, e in envs.items()}
    finally:
        _close(envs)
    assert reasons == {
        "right": None,
        "wrong": None,
        "no_call": "no tool call",
        "hints_only": "no call scored",
        "invalid_only": "only invalid calls",
        "crash": "tool_raised",
        "break": "tool_raised",
    }


def test_a_score_survives_a_later_environment_failure() -> None:
    episode = Episode(task_index=0)
    episode.called("echo", {}, "ok", 0.5, False, 0.01)
    from orsgen.runtime.errors import ToolEnvironmentError

    failure = ToolEnvironmentError("echo", "timeout", "slow")
    episode.called("echo", {}, str(failure), None, False, 1.0, failure)
    assert classify(episode, [0.5, None], -1.0).reward == 0.5
    assert classify(Episode(void_reason="lost_session"), [0.5], -1.0).kind == "failed"

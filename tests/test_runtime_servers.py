"""Several servers for one environment (issue 18): ``base_url`` takes a sequence of URLs.

Two real echo ORS servers of this test's own (``ors_servers.own``), one of which is stopped
by PID. Sessions are placed on the server with the fewest open sessions of this process,
every request of a session goes to the server that created it, a stopped server affects only
its own sessions, and ``load_tasks`` reads from the first server that answers.
"""

from __future__ import annotations

import ors_server
import pytest
from conftest import ECHO_ENV, said

from generated.echo import EchoEnv, load_tasks, outcome_reward
from orsgen.runtime.adapter import UNAVAILABLE_PROMPT

pytestmark = [pytest.mark.usefixtures("fresh_runtime"), pytest.mark.timeout(300)]

TARGETS = ["apple", "banana", "cherry", "damson"]
CALL = "POST /echoenv/call"


def _pair(ors_servers: ors_server.Servers) -> tuple[ors_server.RunningServer, ...]:
    return ors_servers.own(ECHO_ENV), ors_servers.own(ECHO_ENV)


@pytest.mark.slow
def test_sessions_spread_over_both_servers_and_stay_on_theirs(
    ors_servers: ors_server.Servers,
) -> None:
    a, b = _pair(ors_servers)
    envs = [EchoEnv(base_url=[a.url, b.url], prefetch=False) for _ in range(4)]
    try:
        for i, env in enumerate(envs):
            env.reset(task_index=i)
        assert (a.open_sessions(), b.open_sessions()) == (2, 2)
        a.reset_counts()
        b.reset_counts()
        for i, env in enumerate(envs):
            env.echo(text=TARGETS[i])
        assert outcome_reward(envs) == [1.0] * 4
        # Session affinity: each call reached the server that holds its session (a call on
        # the other would have been answered 404 and not scored).
        assert (a.requests().get(CALL, 0), b.requests().get(CALL, 0)) == (2, 2)
    finally:
        EchoEnv.close_all()
    assert (a.wait_sessions(0), b.wait_sessions(0)) == (0, 0)


@pytest.mark.slow
def test_with_one_server_stopped_new_rollouts_all_succeed_on_the_other(
    ors_servers: ors_server.Servers,
) -> None:
    a, b = _pair(ors_servers)
    urls = [a.url, b.url]
    envs = [EchoEnv(base_url=urls, reconnect_for=60) for _ in range(4)]
    try:
        for i, env in enumerate(envs):  # both servers answer: both have been reached
            env.reset(task_index=i)
        assert a.open_sessions() > 0 and b.open_sessions() > 0
        EchoEnv.close_all()
        b.stop()
        a.reset_counts()
        rewards = []
        for r in range(2):
            for i, env in enumerate(envs):
                assert env.reset(task_index=(i + r) % 4) != UNAVAILABLE_PROMPT
                env.echo(text=TARGETS[(i + r) % 4])
                rewards.append(outcome_reward([env])[0])
        assert rewards == [1.0] * 8
        assert a.requests().get(CALL, 0) == 8
        assert EchoEnv.degraded_rollouts() == 0
    finally:
        EchoEnv.close_all()
    assert a.wait_sessions(0) == 0


@pytest.mark.slow
def test_a_stopped_server_only_affects_its_own_sessions(ors_servers: ors_server.Servers) -> None:
    """A rollout held on the server that stops ends unscored; one held on the other scores."""
    a, b = _pair(ors_servers)
    on_a, on_b = (EchoEnv(base_url=[a.url, b.url], prefetch=False, reconnect_for=2) for _ in "ab")
    try:
        on_a.reset(task_index=0)  # fewest open: the first goes to a, the second to b
        on_b.reset(task_index=1)
        assert (a.open_sessions(), b.open_sessions()) == (1, 1)
        b.stop()
        on_a.echo(text="apple")
        assert "environment unavailable" in said(lambda: on_b.echo(text="banana"))
        assert outcome_reward([on_a, on_b]) == [1.0, None]
    finally:
        EchoEnv.close_all()


@pytest.mark.slow
def test_load_tasks_reads_from_the_first_server_that_answers(
    ors_servers: ors_server.Servers,
) -> None:
    gone, a = _pair(ors_servers)
    gone.stop()
    tasks = load_tasks(base_url=[gone.url, a.url])
    assert [row["target"] for row in tasks] == TARGETS
    assert list(tasks["task_index"]) == [0, 1, 2, 3]


def test_an_empty_sequence_of_servers_is_refused() -> None:
    with pytest.raises(ValueError, match="base_url"):
        EchoEnv(base_url=[])


# -- the placement rule alone (the replica pool, orsgen/runtime/transport/replicas.py) ------------


def _placed(open_on: dict[str, int], down_since: dict[str, float]) -> str:
    """Where opening._pick puts the next session: the pool of the servers' health records."""
    from orsgen.runtime.transport.health import ServerHealth
    from orsgen.runtime.transport.replicas import ReplicaPool

    records = [ServerHealth(url) for url in ("http://a", "http://b", "http://c")]
    for record in records:
        record.down_since = down_since.get(record.url)
    servers = ReplicaPool(records[: 2 if down_since else 3])
    chosen = servers.choose(load=lambda r: open_on.get(r.url, 0), tries=False)
    return (chosen or servers.last_down()).url


def test_placement_picks_the_fewest_open_then_the_earlier_url() -> None:
    assert _placed({}, {}) == "http://a"
    assert _placed({"http://a": 2, "http://b": 1, "http://c": 1}, {}) == "http://b"


def test_placement_skips_a_server_that_is_down_unless_all_are() -> None:
    assert _placed({"http://b": 5}, {"http://a": 10.0}) == "http://b"
    # All down: the one that went away last (its window ends last).
    assert _placed({}, {"http://a": 10.0, "http://b": 20.0}) == "http://b"
    assert _placed({}, {"http://a": 20.0, "http://b": 20.0}) == "http://a"

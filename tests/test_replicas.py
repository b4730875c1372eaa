"""The one replica pool (orsgen/runtime/transport/replicas.py) through its public API, once
for the evaluation's endpoints and the runtime's servers, which both hold one: the one list
of the statuses that mean "away"; the least loaded choice; a failing replica's rest, its
doubling up to the cap and its return, with one log line each way; the down limit; and one
task's failures, which never take a replica down. A fake clock; no network."""

from __future__ import annotations

import logging

import aiohttp
import pytest
import openai
from aiohttp.client_reqrep import RequestInfo
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from orsgen.eval import endpoints
from orsgen.runtime.transport import health
from orsgen.runtime.transport.replicas import AWAY_STATUSES, PoolDown, Replica, ReplicaPool


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


LOG = logging.getLogger("test_replicas")


def pool(count: int, clock: Clock, limit: float = 60.0) -> ReplicaPool[Replica]:
    replicas = [Replica(f"http://{n}") for n in "abc"[:count]]
    return ReplicaPool(replicas, limit, clock, rests=(1.0, 8.0), log=LOG)


def names(taken: list[Replica]) -> str:
    return "".join(r.url[7] for r in taken)


def gateway(status: int) -> aiohttp.ClientResponseError:
    info = RequestInfo(URL("http://s/x"), "POST", CIMultiDictProxy(CIMultiDict()))
    return aiohttp.ClientResponseError(info, (), status=status, message="gateway")


def openai_answer(status: int) -> openai.APIStatusError:
    import httpx

    request = httpx.Request("POST", "http://e/v1/chat/completions")
    response = httpx.Response(status, request=request, json={"error": {"message": "x"}})
    return openai.APIStatusError("x", response=response, body={"error": {"message": "x"}})


def test_one_list_of_away_statuses_for_the_endpoints_and_the_servers() -> None:
    assert AWAY_STATUSES == {408, 409, 429, 502, 503, 504}
    for status in range(400, 600):
        away = status in AWAY_STATUSES
        # The evaluation's endpoints and the runtime's servers read the same list.
        assert (endpoints._fault(openai_answer(status)) == "away") == away, status
        assert health.unreachable(gateway(status)) == away, status


def test_the_least_loaded_replica_takes_the_next_request_ties_in_turn() -> None:
    replicas = pool(3, Clock())
    a, b, c = replicas.replicas
    assert [replicas.take()[0] for _ in range(3)] == [a, b, c]  # all idle: in turn
    replicas.answered(b)
    assert replicas.take()[0] is b  # b has none in flight, a and c one each
    replicas.answered(a)
    replicas.answered(c)
    # a and c now have none, b one: the next two go to a and c, then all have one.
    assert {replicas.take()[0], replicas.take()[0]} == {a, c}
    assert [r.in_flight for r in replicas.replicas] == [1, 1, 1]
    assert replicas.choose(load=lambda r: {"http://a": 0}.get(r.url, 9)) is a  # the caller's load
    # One request at a time still spreads: ties go in turn.
    replicas = pool(3, Clock())
    seen = []
    for _ in range(6):
        replica, _ = replicas.take()
        seen.append(replica)
        replicas.answered(replica)
    assert names(seen) == "abcabc"
    assert [r.requests for r in replicas.replicas] == [2, 2, 2]


def test_a_request_sent_again_goes_to_another_replica_when_one_can_take_it() -> None:
    replicas = pool(2, Clock())
    a, b = replicas.replicas
    busy = [replicas.take()[0] for _ in range(4)]  # two each
    replicas.answered(busy[0])  # a has the fewest in flight, yet the request a failed goes to b
    assert replicas.take(avoid=a)[0] is b
    replicas.answered(b)
    replicas.answered(b)
    assert replicas.take(avoid=b)[0] is a
    replicas.failed(a, False, "connection failed")  # b alone can take requests now
    assert replicas.take(avoid=b)[0] is b


def test_a_failing_replica_rests_doubling_up_to_the_cap_and_returns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    replicas = pool(2, clock)
    a, b = replicas.replicas
    caplog.set_level(logging.WARNING, LOG.name)
    taken, _ = replicas.take()
    assert taken is a
    assert replicas.failed(a, False, "connection failed")  # no task: it is down at once
    assert a.down_since == 0.0 and a.rest == a.rest_until == 1.0 and a.outages == 1
    for _ in range(4):  # while a rests, b takes everything, however busy it is
        assert replicas.take()[0] is b
    assert replicas.choose(tries=False) is b and not a.due(clock())
    rests = []
    for _ in range(5):
        clock.now = a.rest_until
        taken, tried = replicas.take()
        assert taken is a and tried  # its rest is over: one request tries it
        assert replicas.take()[0] is b  # and only one at a time
        assert replicas.failed(a, True, "connection failed")  # its try failed: the rest doubles
        rests.append(a.rest)
    assert rests == [2.0, 4.0, 8.0, 8.0, 8.0] and a.rest_until == clock.now + 8.0
    clock.now = a.rest_until
    assert a.due(clock()) and a.rest_until == clock.now + 8.0  # a probe now, the next later
    clock.now = a.rest_until
    taken, tried = replicas.take()
    replicas.answered(taken)
    assert taken is a and tried and a.down_since is None
    assert a.outages == 1 and a.failures == 6
    lines = [rec.getMessage() for rec in caplog.records]
    assert len(lines) == 2, lines  # one line when it went down, one when it came back
    assert lines[0].startswith("endpoint http://a is down (connection failed)")
    assert "go to the other endpoints" in lines[0]
    assert lines[1].startswith("endpoint http://a is back after ")
    assert replicas.counts()["http://a"] == {"requests": 7, "failures": 6, "outages": 1}


def test_a_request_sent_before_the_outage_does_not_lengthen_the_rest() -> None:
    replicas = pool(2, Clock())
    a = replicas.replicas[0]
    one, _ = replicas.take()
    replicas.take()
    two, _ = replicas.take()  # a again: a has two in flight when it goes down
    assert one is a and two is a
    replicas.failed(a, False, "connection failed")
    replicas.failed(a, False, "connection failed")  # the other one, sent before it went down
    assert a.rest == 1.0 and a.outages == 1 and a.failures == 2


def test_the_down_limit_stops_every_request_once_every_replica_is_down() -> None:
    # One replica down past the limit stops nothing while another answers.
    clock = Clock()
    replicas = pool(2, clock, limit=30.0)
    a, b = replicas.replicas
    replicas.failed(replicas.take()[0], False, "connection failed")  # a down at 0, resting 1 s
    clock.now = 0.5
    for _ in range(3):
        taken, _ = replicas.take()
        assert taken is b
        replicas.answered(b)
    clock.now = 35.0  # a has been down for longer than the limit, b is up
    taken, tried = replicas.take()
    assert taken is a and tried  # a's rest is over: it is tried
    replicas.answered(a)
    assert a.down_since is None and a.outages == 1
    # Every replica down for the limit: every request stops, at once.
    clock = Clock()
    replicas = pool(2, clock, limit=30.0)
    a, b = replicas.replicas
    for replica in (replicas.take()[0], replicas.take()[0]):
        replicas.failed(replica, False, "HTTP 503 (InternalServerError)")
    assert {a.down_since, b.down_since} == {0.0}
    clock.now = 20.0  # their rests are over: one request may try each
    for _ in range(2):
        taken, tried = replicas.take()
        assert tried
        replicas.failed(taken, True, "connection failed")
    clock.now = 30.0
    with pytest.raises(PoolDown) as raised:
        replicas.take()
    said = str(raised.value)
    assert "every endpoint has been down for 30 s" in said
    assert "http://a (connection failed)" in said and "http://b (connection failed)" in said
    with pytest.raises(PoolDown):  # every later request too
        replicas.take()


def test_one_tasks_failures_never_take_a_replica_down_two_tasks_do() -> None:
    replicas = pool(2, Clock())
    a, b = replicas.replicas
    for _ in range(3):  # one poisonous task, over and over: every replica stays up
        for replica in (a, b):
            assert replicas.take(avoid=b if replica is a else a)[0] is replica
            assert not replicas.failed(replica, False, "HTTP 504", task=7)
    assert not a.down and not b.down
    replicas.take()
    replicas.answered(a)  # an answer clears the suspicion
    replicas.take(avoid=b)
    assert not replicas.failed(a, False, "HTTP 504", task=8)
    replicas.take(avoid=b)
    assert replicas.failed(a, False, "HTTP 504", task=9)  # a second task: a real outage
    assert a.down and not b.down


def test_every_server_down_places_on_the_one_that_went_away_last() -> None:
    clock = Clock()
    replicas = pool(3, clock)
    for when, replica in zip((5.0, 9.0, 9.0), replicas.replicas, strict=True):
        clock.now = when
        replica.went_away(when, replicas.rests)
    assert replicas.choose(tries=False) is None
    assert replicas.last_down().url == "http://b"  # ties: the earlier

"""The one replica pool (orsgen/runtime/transport/replicas.py) through its public API: the one
list of the statuses that mean "away", which both the evaluation's endpoints and the
runtime's servers read; the least loaded choice; a failing replica's rest and its return; and
one task's failures, which never take a replica down. A fake clock; no network."""

from __future__ import annotations

import aiohttp
import openai
from aiohttp.client_reqrep import RequestInfo
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from orsgen.eval import endpoints
from orsgen.runtime.transport import health
from orsgen.runtime.transport.replicas import AWAY_STATUSES, Replica, ReplicaPool


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def pool(count: int, clock: Clock) -> ReplicaPool[Replica]:
    return ReplicaPool([Replica(f"http://{n}") for n in "abc"[:count]], 60.0, clock, (1.0, 4.0))


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
    assert [replicas.take()[0] for _ in range(3)] == [a, b, c]
    replicas.answered(b)
    assert replicas.take()[0] is b  # b has none in flight, a and c one each
    assert replicas.choose(load=lambda r: {"http://a": 0}.get(r.url, 9)) is a  # the caller's load
    assert replicas.choose(avoid=a, load=lambda r: 0) is not a  # not the one that failed it


def test_a_failing_replica_rests_and_returns_once_its_rest_is_over() -> None:
    clock = Clock()
    replicas = pool(2, clock)
    a, b = replicas.replicas
    taken, _ = replicas.take()
    assert taken is a
    assert replicas.failed(a, False, "connection failed")  # no task: it is down at once
    assert a.down and a.rest_until == 1.0
    assert [replicas.take()[0] for _ in range(3)] == [b, b, b]  # resting: b takes them
    assert replicas.choose(tries=False) is b and not a.due(clock())
    clock.now = 1.0  # its rest is over: its return is due, one request (or probe) tries it
    taken, tried = replicas.take()
    assert taken is a and tried
    assert replicas.failed(a, True, "connection failed")  # its try failed: the rest doubles
    assert a.rest == 2.0 and a.rest_until == 3.0 and a.outages == 1
    clock.now = 3.0
    assert a.due(clock()) and a.rest_until == 5.0  # a probe now, the next one a rest later
    clock.now = 5.0
    taken, tried = replicas.take()
    replicas.answered(taken)
    assert taken is a and not a.down and a.outages == 1
    assert replicas.counts()["http://a"] == {"requests": 3, "failures": 2, "outages": 1}


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

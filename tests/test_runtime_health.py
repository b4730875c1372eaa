"""orsgen/runtime/transport/health.py, with no server and no real waiting: the call policy (wait /
retry / degrade / fail), its backoff and reconnect window on an injected clock, the error
classifiers, and the health record's counts. The same rules on a real server that is
stopped and restarted: tests/test_runtime_health_outage.py."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest

from orsgen.runtime.transport import health
from orsgen.runtime.transport.health import ServerHealth
from orsgen.runtime.transport.policy import Action, CallPolicy

URL = "http://127.0.0.1:9"


class FakeTime:
    """A clock that moves only when the policy sleeps; the server answers from ``up_at``."""

    def __init__(self, up_at: float | None = None) -> None:
        self.now = 1000.0
        self.up_at = up_at  # absolute time; None: never
        self.sleeps: list[float] = []
        self.probes: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    async def probe(self, url: str) -> bool:
        assert url == URL
        self.probes.append(self.now)
        return self.up_at is not None and self.now >= self.up_at


def _run(coro: Coroutine[Any, Any, bool], timeout: float) -> bool:
    return asyncio.run(coro)


def _policy(
    fake: FakeTime, reconnect_for: float = 30.0, strict: bool = False, reached: bool = True
) -> CallPolicy:
    record = ServerHealth(URL, clock=fake.clock)
    record.reached = reached
    return CallPolicy(
        record,
        reconnect_for,
        strict=strict,
        clock=fake.clock,
        sleep=fake.sleep,
        jitter=lambda low, high: high,  # no jitter: the backoff's upper bound
        probe=fake.probe,
        run=_run,
    )


def refused() -> aiohttp.ClientConnectorError:
    key: Any = SimpleNamespace(host="127.0.0.1", port=9, ssl=True, is_ssl=False)
    return aiohttp.ClientConnectorError(key, ConnectionRefusedError(111, "Connection refused"))


def answered(status: int, message: str = "") -> aiohttp.ClientResponseError:
    info: Any = SimpleNamespace(real_url=URL)
    return aiohttp.ClientResponseError(info, (), status=status, message=message)


def wrapped(cause: BaseException) -> RuntimeError:
    """An SDK-style wrapper whose cause is the transport error."""
    try:
        raise RuntimeError("open failed") from cause
    except RuntimeError as exc:
        return exc


# -- classifiers -------------------------------------------------------------------------


def test_a_refused_connection_never_reached_the_server_and_means_it_is_away() -> None:
    assert health.never_sent(refused()) and health.unreachable(refused())
    assert health.never_sent(wrapped(refused())) and health.unreachable(wrapped(refused()))


def test_a_gateway_status_or_a_dropped_connection_is_away_but_may_have_been_sent() -> None:
    for exc in (answered(502), answered(503), answered(504), aiohttp.ServerDisconnectedError()):
        assert health.unreachable(exc) and not health.never_sent(exc), exc


def test_an_answer_is_not_an_outage() -> None:
    for exc in (answered(500, "boom"), answered(400, "Invalid index"), ValueError("x")):
        assert not health.unreachable(exc) and not health.never_sent(exc), exc


def test_a_lost_session_is_the_servers_404_not_found_or_410() -> None:
    assert health.is_lost(answered(404, "Active environment not found"))
    assert health.is_lost(wrapped(answered(410)))
    assert not health.is_lost(answered(404, "Not Found"))
    assert not health.is_lost(refused())


def test_the_last_attempt_of_a_retries_error_is_classified() -> None:
    class MaxRetriesError(Exception):
        def __init__(self, errors: list[BaseException]) -> None:
            super().__init__("gave up")
            self.errors = errors

    assert health.never_sent(MaxRetriesError([answered(500), refused()]))
    assert not health.never_sent(MaxRetriesError([refused(), answered(500)]))


# -- the call policy: opening ------------------------------------------------------------


def test_a_server_never_reached_fails_at_once_without_probing() -> None:
    fake = FakeTime(up_at=None)
    policy = _policy(fake, reached=False)
    assert policy.before_open() is Action.GO
    assert policy.open_failed(refused()) is Action.FAIL
    assert fake.probes == [] and fake.sleeps == [] and not policy.health.down


def test_an_error_answer_fails_the_open_at_once() -> None:
    fake = FakeTime(up_at=None)
    policy = _policy(fake)
    assert policy.open_failed(answered(500, "setup() raised")) is Action.FAIL
    assert policy.open_failed(None) is Action.FAIL
    assert fake.probes == [] and not policy.health.down


def test_a_server_back_within_the_window_is_retried(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "orsgen.runtime")
    fake = FakeTime(up_at=1007.0)
    policy = _policy(fake)
    assert policy.open_failed(wrapped(refused())) is Action.RETRY
    assert fake.now >= 1007.0 and not policy.health.down and policy.health.reached
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and "stopped answering" in lines[0], lines
    assert "answers again after" in lines[1] and "degraded" not in lines[1], lines


def test_backoff_doubles_from_half_a_second_to_ten_and_stops_at_the_window() -> None:
    fake = FakeTime(up_at=None)
    policy = _policy(fake, reconnect_for=60.0)
    assert policy.open_failed(refused()) is Action.DEGRADE
    assert fake.sleeps[:6] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0]
    assert set(fake.sleeps[5:-1]) == {10.0}  # capped
    assert sum(fake.sleeps) == pytest.approx(60.0)  # the last sleep ends at the window
    assert fake.now == pytest.approx(1060.0) and fake.probes[-1] == pytest.approx(1060.0)


def test_jitter_draws_each_wait_between_half_and_all_of_the_backoff() -> None:
    fake = FakeTime(up_at=None)
    drawn: list[tuple[float, float]] = []

    def jitter(low: float, high: float) -> float:
        drawn.append((low, high))
        return low

    policy = _policy(fake, reconnect_for=5.0)
    policy._jitter = jitter  # pyright: ignore[reportPrivateUsage]
    policy.open_failed(refused())
    assert drawn[:4] == [(0.25, 0.5), (0.5, 1.0), (1.0, 2.0), (2.0, 4.0)]
    assert fake.sleeps[:4] == [0.25, 0.5, 1.0, 2.0]


def test_past_the_window_the_rollout_degrades_or_with_strict_is_unavailable() -> None:
    assert _policy(FakeTime(None), reconnect_for=3.0).open_failed(refused()) is Action.DEGRADE
    strict = _policy(FakeTime(None), reconnect_for=3.0, strict=True)
    assert strict.open_failed(refused()) is Action.UNAVAILABLE


def test_the_window_counts_from_when_the_server_went_away_not_from_each_failure() -> None:
    fake = FakeTime(up_at=None)
    policy = _policy(fake, reconnect_for=20.0)
    assert policy.open_failed(refused()) is Action.DEGRADE
    went = policy.health.down_since
    assert went == 1000.0 and fake.now == pytest.approx(1020.0)
    fake.now += 5.0  # a later reset meets the same outage: the window is already over
    probes = len(fake.probes)
    assert policy.before_open() is Action.DEGRADE
    assert len(fake.probes) == probes + 1 and policy.health.down_since == went  # one probe


def test_a_known_outage_is_waited_out_before_opening() -> None:
    fake = FakeTime(up_at=1004.0)
    policy = _policy(fake)
    policy.health.away(refused())
    assert policy.before_open() is Action.GO
    assert fake.now >= 1004.0 and not policy.health.down
    probes = len(fake.probes)
    assert policy.before_open() is Action.GO and len(fake.probes) == probes  # back: no probe


def test_no_known_outage_opens_without_probing() -> None:
    fake = FakeTime(up_at=None)
    assert _policy(fake).before_open() is Action.GO
    never = _policy(fake, reached=False)
    never.health.away(refused())  # away, but never reached: the open itself must say why
    assert never.before_open() is Action.GO
    assert fake.probes == []


def test_reconnect_for_zero_never_waits_and_never_marks_the_server_away() -> None:
    fake = FakeTime(up_at=None)
    policy = _policy(fake, reconnect_for=0.0)
    assert policy.open_failed(refused()) is Action.DEGRADE
    assert policy.call_failed(refused(), until=fake.now + 60) is Action.DEGRADE
    assert fake.probes == [] and not policy.health.down


def test_a_runner_that_times_out_counts_as_not_back() -> None:
    fake = FakeTime(up_at=None)
    policy = _policy(fake)
    budgets: list[float] = []

    def hung(coro: Coroutine[Any, Any, bool], timeout: float) -> bool:
        coro.close()
        budgets.append(timeout)
        raise TimeoutError

    policy._run = hung  # pyright: ignore[reportPrivateUsage]
    assert policy.open_failed(refused()) is Action.DEGRADE
    assert budgets == [pytest.approx(30.0 + health.WAIT_SLACK)]


# -- the call policy: tool calls ---------------------------------------------------------


def test_a_lost_session_ends_the_call_and_counts_as_an_answer() -> None:
    fake = FakeTime(up_at=None)
    policy = _policy(fake, reached=False)
    assert policy.call_failed(answered(404, health.LOST_SESSION_TEXT), fake.now + 5) is Action.LOST
    assert policy.health.reached and fake.probes == []


def test_a_call_that_may_have_run_is_never_retried() -> None:
    fake = FakeTime(up_at=1000.0)  # it would answer a probe at once
    policy = _policy(fake)
    assert policy.call_failed(aiohttp.ServerDisconnectedError(), fake.now + 60) is Action.FAIL
    assert policy.health.down  # the server is away: later resets wait for it
    assert fake.probes == []  # ...but this call is not sent again
    other = _policy(FakeTime(up_at=None))
    assert other.call_failed(answered(500, "tool raised"), 2000.0) is Action.FAIL
    assert not other.health.down


def test_a_call_never_sent_is_sent_again_once_the_server_answers() -> None:
    fake = FakeTime(up_at=1003.0)
    policy = _policy(fake)
    assert policy.call_failed(refused(), until=fake.now + 60) is Action.RETRY
    assert fake.now >= 1003.0 and not policy.health.down


def test_a_call_stops_waiting_at_its_own_timeout_inside_the_window() -> None:
    fake = FakeTime(up_at=None)
    policy = _policy(fake, reconnect_for=300.0)
    assert policy.call_failed(refused(), until=fake.now + 4.0) is Action.TIMED_OUT
    assert fake.now == pytest.approx(1004.0)  # waited until the call's deadline, not the window
    assert policy.health.down


def test_a_call_past_the_window_degrades() -> None:
    fake = FakeTime(up_at=None)
    policy = _policy(fake, reconnect_for=6.0)
    assert policy.call_failed(refused(), until=fake.now + 60.0) is Action.DEGRADE
    assert fake.now == pytest.approx(1006.0)


def test_success_marks_the_server_reached_and_back(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "orsgen.runtime")
    fake = FakeTime(up_at=None)
    policy = _policy(fake, reached=False)
    policy.succeeded()
    assert policy.health.reached and caplog.records == []  # first contact: nothing to say
    policy.health.away(refused())
    fake.now += 12.5
    policy.succeeded()
    assert not policy.health.down
    assert caplog.records[-1].getMessage().endswith("answers again after 12.5 s")


# -- the health record ---------------------------------------------------------------------


class Base:
    pass


class Child(Base):
    pass


def test_degraded_rollouts_are_counted_once_per_class_and_stretch(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "orsgen.runtime")
    fake = FakeTime()
    record = ServerHealth(URL, clock=fake.clock)
    record.reached = True
    record.away(refused())
    record.degrade(Child, 30.0)
    record.degrade(Child, 30.0)
    record.degrade(Base, 30.0)
    assert record.degraded == 3
    assert (record.degraded_of(Child), record.degraded_of(Base)) == (2, 3)
    assert sum("run degraded" in r.getMessage() for r in caplog.records) == 1  # once a stretch
    record.answered()
    assert "3 rollout(s) ran degraded meanwhile" in caplog.records[-1].getMessage()
    assert record.degraded == 0 and record.degraded_of(Base) == 3  # all time stays
    record.away(refused())
    record.degrade(Base, 30.0)
    assert record.degraded == 1 and record.degraded_of(Base) == 4
    assert sum("run degraded" in r.getMessage() for r in caplog.records) == 2


def test_the_process_sums_degraded_rollouts_over_every_server() -> None:
    health.forget()
    try:
        health.record("http://127.0.0.1:1").degrade(Child, 1.0)
        health.record("http://127.0.0.1:2").degrade(Child, 1.0)
        health.record("http://127.0.0.1:2").degrade(Base, 1.0)
        assert health.degraded(Child) == 2 and health.degraded(Base) == 3
        assert health.record("http://127.0.0.1:1") is health.record("http://127.0.0.1:1")
    finally:
        health.forget()
    assert health.degraded(Base) == 0

"""orsgen/runtime/sessions/pool.py with fake sessions on the runtime loop (no server): group
prefetch (fixed and learned group sizes, discarding a broken pattern), the on-demand retry
of a failed prefetched open, open timeouts, and closing by owner. The same prefetch on a
real server, counted there: tests/test_runtime_pool_prefetch.py."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest

from orsgen.runtime.sessions import cap, pool
from orsgen.runtime.sessions.cap import Place
from orsgen.runtime.sessions.pool import Prefetcher, SessionSlot
from orsgen.runtime.transport.sdk import Opened

pytestmark = pytest.mark.timeout(60)

# Notified whenever a fake session opens or closes, an open is cancelled, or a place under a
# session cap is given back: what the tests wait for, on the runtime loop's thread.
CHANGED = threading.Condition()


def _changed() -> None:
    with CHANGED:
        CHANGED.notify_all()


class FakeSession:
    def __init__(self, n: int) -> None:
        self.n = n
        self.closed = False

    async def __aexit__(self, *exc: object) -> None:
        self.closed = True
        _changed()


class Opener:
    """Opens fake sessions; records each open's ``fetch_tools``. ``fail``: the numbers of
    the opens that raise; ``hang``: never finish (until cancelled)."""

    def __init__(self, fail: frozenset[int] = frozenset(), hang: bool = False) -> None:
        self.fetches: list[bool] = []
        self.sessions: list[FakeSession] = []
        self.cancelled = 0
        self.fail, self.hang = fail, hang

    def __call__(self, fetch_tools: bool) -> Coroutine[Any, Any, Opened]:
        n = len(self.fetches)
        self.fetches.append(fetch_tools)
        return self._open(n)

    async def _open(self, n: int) -> Opened:
        if self.hang:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                _changed()
                raise
        if n in self.fail:
            raise ConnectionError(f"open {n} failed")
        session = FakeSession(n)
        self.sessions.append(session)
        _changed()
        return Opened(session=session, prompt=f"prompt {n}")


@pytest.fixture(autouse=True)
def clean_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    give_back = cap.Places.give_back

    def given_back(places: cap.Places, place: Place) -> None:
        give_back(places, place)
        _changed()

    monkeypatch.setattr(cap.Places, "give_back", given_back)
    pool.forget()
    yield
    pool.forget()
    pool.drain(5.0)


def _owner() -> type:
    return type("Owner", (), {})


def _eventually(check: Callable[[], bool]) -> bool:
    """Whether ``check`` holds within 5 s, waiting on :data:`CHANGED`: a close scheduled by
    a done-callback may still be on its way to the loop when the future's waiter wakes."""
    with CHANGED:
        return CHANGED.wait_for(check, timeout=5.0)


def _take(pf: Prefetcher, key: str, opener: Opener, group_size: int | None) -> Opened:
    return pf.take(key, opener, group_size, False, timeout=5.0)


def test_a_fixed_group_opens_together_and_the_rest_take_prefetched_sessions() -> None:
    pf, opener = Prefetcher(_owner()), Opener()
    first, prefetched = pf.acquire("task 0", opener, 3, True)
    assert not prefetched and opener.fetches == [True, False, False]  # only one lists tools
    assert pf.unused == 2
    rest = [pf.acquire("task 0", opener, 3, False) for _ in range(2)]
    assert [was for _, was in rest] == [True, True] and pf.unused == 0
    sessions = {p.result(5.0).session.n for p in [first] + [p for p, _ in rest]}
    assert sessions == {0, 1, 2}
    pf.acquire("task 0", opener, 3, False)  # a fourth reset of the task: a new group
    assert pf.stats == {"opened": 6, "used_prefetched": 2, "discarded": 0}


def test_a_learned_group_size_is_the_last_run_of_identical_resets() -> None:
    pf, opener = Prefetcher(_owner()), Opener()
    for _ in range(3):
        _take(pf, "a", opener, None)
    assert pf.learned is None and pf.stats["opened"] == 3  # learning: one at a time
    assert pf.stats["used_prefetched"] == 0
    _take(pf, "b", opener, None)
    assert pf.learned == 3 and pf.unused == 2 and pf.stats["opened"] == 6
    _take(pf, "b", opener, None)
    _take(pf, "b", opener, None)
    assert pf.stats["used_prefetched"] == 2 and pf.unused == 0


def test_a_stream_that_never_repeats_never_prefetches() -> None:
    pf, opener = Prefetcher(_owner()), Opener()
    for i in range(5):
        _take(pf, f"task {i}", opener, None)
    assert pf.learned == 1 and pf.stats == {"opened": 5, "used_prefetched": 0, "discarded": 0}


def test_a_reset_for_another_task_discards_and_closes_the_unused_sessions() -> None:
    pf, opener = Prefetcher(_owner()), Opener()
    _take(pf, "a", opener, 4)
    assert pf.unused == 3
    _take(pf, "b", opener, 1)
    assert pf.stats["discarded"] == 3 and pf.unused == 0
    # Each discarded open was closed, or cut short before it opened: only a and b stay open.
    assert _eventually(lambda: [s.n for s in opener.sessions if not s.closed] == [0, 4])


def test_clear_closes_every_unused_session_and_forgets_the_run() -> None:
    pf, opener = Prefetcher(_owner()), Opener()
    _take(pf, "a", opener, 3)
    futures = pf.clear()
    assert len(futures) == 2 and pf.unused == 0
    concurrent.futures.wait(futures, timeout=5.0)  # each settles once opened or cut short
    assert _eventually(lambda: [s.n for s in opener.sessions if not s.closed] == [0])
    _take(pf, "a", opener, 3)  # the run was forgotten: the same task opens a new group
    assert pf.stats["opened"] == 6


def test_a_failed_prefetched_open_is_retried_once_on_demand() -> None:
    pf, opener = Prefetcher(_owner()), Opener(fail=frozenset({1}))
    assert _take(pf, "a", opener, 2).session.n == 0
    opened = _take(pf, "a", opener, 2)  # took open 1, which failed: open 2 on demand
    assert opened.session.n == 2 and opener.fetches == [False, False, False]


def test_a_failed_open_on_demand_raises_its_own_error() -> None:
    pf, opener = Prefetcher(_owner()), Opener(fail=frozenset({0}))
    with pytest.raises(ConnectionError, match="open 0 failed"):
        _take(pf, "a", opener, 1)
    assert len(opener.fetches) == 1  # not retried


def test_an_open_past_its_timeout_is_cut_short() -> None:
    pf, opener = Prefetcher(_owner()), Opener(hang=True)
    with pytest.raises(TimeoutError, match="no session within open_timeout=0.2 s"):
        pf.take("a", opener, 1, False, timeout=0.2)
    assert _eventually(lambda: opener.cancelled == 1)  # cancelled on the loop thread
    assert opener.sessions == []


def test_every_open_goes_through_the_one_place_a_cap_would_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool] = []
    real = pool._open  # pyright: ignore[reportPrivateUsage]

    def counting(
        opener: pool.Opener, fetch_tools: bool, place: Place | None = None
    ) -> pool.Pending:
        seen.append(fetch_tools)
        return real(opener, fetch_tools, place)

    monkeypatch.setattr(pool, "_open", counting)
    pf, opener = Prefetcher(_owner()), Opener(fail=frozenset({1}))
    _take(pf, "a", opener, 2)
    _take(pf, "a", opener, 2)  # the failed prefetched open's retry too
    assert len(seen) == len(opener.fetches) == 3


def test_close_sessions_of_one_class_leaves_the_others() -> None:
    mine, theirs = _owner(), _owner()
    opener = Opener()
    slots = [SessionSlot(mine), SessionSlot(theirs)]
    for slot in slots:
        slot.hold(_take(pool.prefetcher(("k", id(slot.owner)), slot.owner), "a", opener, 2).session)
    assert [pool.prefetcher(("k", id(o)), o).unused for o in (mine, theirs)] == [1, 1]
    assert _eventually(lambda: len(opener.sessions) == 4)  # the prefetched ones opened too
    pool.close_sessions(5.0, of=lambda klass: klass is mine)
    assert slots[0].session is None and slots[1].session is not None
    assert [pool.prefetcher(("k", id(o)), o).unused for o in (mine, theirs)] == [0, 1]
    # Mine: the held one and the prefetched one.
    assert _eventually(lambda: [s.closed for s in opener.sessions if s.n < 2] == [True] * 2)
    assert [s.closed for s in opener.sessions if s.n >= 2] == [False] * 2
    pool.close_sessions(5.0)
    assert _eventually(lambda: all(s.closed for s in opener.sessions))


# -- places under a session cap (orsgen/runtime/sessions/cap.py) --------------------------------


def test_prefetch_opens_only_into_free_places() -> None:
    owner = _owner()
    pf, opener = Prefetcher(owner), Opener()
    claim = cap.claim(owner, 2, 5.0)
    first = pf.take("task 0", opener, 4, False, timeout=5.0, claim=claim, url="http://a")
    assert len(opener.fetches) == 2 and pf.unused == 1  # 1 + 1 prefetched, not 1 + 3
    assert cap.of(owner).open_on() == {"http://a": 2}
    assert first.place is not None


def test_a_failed_open_gives_its_place_back() -> None:
    owner = _owner()
    pf, opener = Prefetcher(owner), Opener(fail=frozenset({0}))
    with pytest.raises(ConnectionError):
        pf.take("task 0", opener, 1, False, timeout=5.0, claim=cap.claim(owner, 1, 5.0))
    assert _eventually(lambda: sum(cap.of(owner).open_on().values()) == 0)


def test_a_closed_session_gives_its_place_back_once_its_close_is_done() -> None:
    owner = _owner()
    opener = Opener()
    opened = Prefetcher(owner).take(
        "task 0", opener, 1, False, timeout=5.0, claim=cap.claim(owner, 1, 5.0)
    )
    slot = SessionSlot(owner)
    slot.hold(opened.session, opened.place)
    assert sum(cap.of(owner).open_on().values()) == 1
    slot.close(wait=True)
    assert opener.sessions[0].closed
    assert _eventually(lambda: sum(cap.of(owner).open_on().values()) == 0)

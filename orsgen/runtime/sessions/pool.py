"""The sessions of this process, held, prefetched, opening or closing, tracked so that
``close_all()`` and interpreter exit close what is left, concurrently and in bounded time;
and group prefetch (:class:`Prefetcher`, docs/scale.md "Group prefetch").
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Coroutine, Hashable
from typing import Any

from orsgen.runtime.sessions.cap import Claim, Place
from orsgen.runtime.transport import sdk
from orsgen.runtime.transport.process import Process, Records, at_shutdown, current
from orsgen.runtime.transport.sdk import Opened

# How long ``adapter.close()`` or ``close_all()`` waits before leaving the rest to the
# background; and the bound for closing what is left at interpreter exit.
CLOSE_WAIT = 5.0
EXIT_BUDGET = 5.0
# Shutdown order: sessions first, while the HTTP clients they need are still open.
SHUTDOWN_ORDER = 10

Opener = Callable[[bool], Coroutine[Any, Any, Opened]]


class Sessions:
    """The process's sessions (held and opening ones weakly: their owners keep them)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # reentrant, as Process's
        self._live: weakref.WeakSet[SessionSlot | Pending] = weakref.WeakSet()
        self._closing: set[concurrent.futures.Future[None]] = set()
        self.streams: Records[Hashable, Prefetcher] = Records()

    def track(self, live: SessionSlot | Pending) -> None:
        with self._lock:
            self._live.add(live)

    def held(self) -> list[SessionSlot]:
        with self._lock:
            return [s for s in self._live if isinstance(s, SessionSlot)]

    def still_opening(self) -> list[Pending]:
        with self._lock:
            return [p for p in self._live if isinstance(p, Pending) and not p.future.done()]

    def closing(self, fut: concurrent.futures.Future[None]) -> None:
        with self._lock:
            self._closing.add(fut)
        fut.add_done_callback(self._closed)

    def _closed(self, fut: concurrent.futures.Future[None]) -> None:
        with self._lock:
            self._closing.discard(fut)

    def drain(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            with self._lock:
                pending = list(self._closing)
            if not pending:
                return
            concurrent.futures.wait(pending, timeout=left)


def sessions() -> Sessions:
    """This process's sessions (fresh after a fork)."""
    return current().part(Sessions)


def drain(timeout: float = CLOSE_WAIT) -> None:
    sessions().drain(timeout)


def close_later(session: Any, place: Place | None = None) -> concurrent.futures.Future[None]:
    """Close a session in the background; its ``place`` under the cap is given back once the
    server answered the delete."""
    fut = current().submit(sdk.close_async(session))
    sessions().closing(fut)
    if place is not None:
        place.closing = True
        fut.add_done_callback(lambda _: place.release())
    return fut


class SessionSlot:
    """An adapter's open SDK session, held apart so a finalizer can close it."""

    def __init__(self, owner: type) -> None:
        self.session: Any = None
        self.place: Place | None = None  # the session's place under the cap
        self.owner = owner
        self._process: Process | None = None

    def hold(self, session: Any, place: Place | None = None) -> None:
        self._process = current()
        self._process.part(Sessions).track(self)
        self.session, self.place = session, place

    def take(self) -> Any:
        session, self.session = self.session, None
        return session

    def close(self, wait: bool = True) -> None:
        """Close the held session; ``wait``: for at most ``CLOSE_WAIT`` seconds."""
        session, place = self.take(), self.place
        self.place = None
        if session is None or self._process is not current():
            return  # nothing held, or a forked child's copy of its parent's session
        fut = close_later(session, place)
        if wait and not current().in_loop_thread():
            concurrent.futures.wait([fut], timeout=CLOSE_WAIT)


class Pending:
    """A session being opened, discardable at any moment without a leak; ``future`` settles
    only after that cleanup."""

    def __init__(self, coro: Coroutine[Any, Any, Opened], place: Place | None = None) -> None:
        self.discarded = False
        self.place = place  # handed on with the session (``Opened.place``), else given back
        self._task: asyncio.Task[Opened] | None = None
        self.future: concurrent.futures.Future[Opened] = current().submit(self._run(coro))
        self.future.add_done_callback(self._give_back_unless_opened)
        sessions().track(self)

    def _give_back_unless_opened(self, f: concurrent.futures.Future[Opened]) -> None:
        if self.place is not None and (f.cancelled() or f.exception() is not None):
            self.place.release()  # no session came of it (or it was closed already)

    async def _run(self, coro: Coroutine[Any, Any, Opened]) -> Opened:
        self._task = asyncio.current_task()
        if self.discarded:
            coro.close()
            raise asyncio.CancelledError()
        opened = await coro
        if self.discarded:
            await sdk.close_async(opened.session)
            raise asyncio.CancelledError()
        opened.place = self.place
        return opened

    def _cancel_task(self) -> None:  # on the loop
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def discard(self) -> None:
        self.discarded = True
        if self.place is not None:
            self.place.closing = True

        def _close_if_opened(f: concurrent.futures.Future[Opened]) -> None:
            if not f.cancelled() and f.exception() is None:
                close_later(f.result().session, self.place)

        try:
            current().loop.call_soon(self._cancel_task)
        except RuntimeError:  # the loop is gone (late at exit): nothing left to cut short
            pass
        self.future.add_done_callback(_close_if_opened)

    def result(self, timeout: float) -> Opened:
        """Wait for the session; on timeout it is discarded and ``TimeoutError`` raised."""
        try:
            return self.future.result(timeout=timeout)
        except TimeoutError:
            self.discard()
            raise


def _wait(pending: Pending, timeout: float) -> Opened:
    try:
        return pending.result(timeout=timeout)
    except TimeoutError:
        raise TimeoutError(f"no session within open_timeout={timeout:g} s") from None
    except BaseException as exc:
        # concurrent.futures.CancelledError is not an Exception subclass everywhere
        if type(exc).__name__ == "CancelledError":
            raise RuntimeError("the session open was cancelled") from None
        raise


class Prefetcher:
    """One reset stream (one adapter class on one endpoint)."""

    def __init__(self, owner: type) -> None:
        self.owner = owner  # the adapter class whose resets these are
        self._lock = threading.Lock()
        self._key: Hashable | None = None
        self._run = 0  # resets seen for the current key
        self.learned: int | None = None  # length of the last completed run
        self._pool: deque[Pending] = deque()
        self.stats = {"opened": 0, "used_prefetched": 0, "discarded": 0}

    def take(
        self,
        key: Hashable,
        opener: Opener,
        group_size: int | None,
        check_tools: bool,
        timeout: float,
        claim: Claim | None = None,
        url: str = "",
    ) -> Opened:
        """This reset's session, open within ``timeout`` seconds; a prefetched one that failed
        is tried once more on demand. ``claim`` gives each new session its place under the
        cap on server ``url``: the reset's own waits for one, prefetched ones take free ones."""
        pending, prefetched = self.acquire(key, opener, group_size, check_tools, claim, url)
        try:
            return _wait(pending, timeout)
        except Exception:
            if not prefetched:
                raise
        return _wait(_open(opener, False, _place(claim, url, True)), timeout)

    def acquire(
        self,
        key: Hashable,
        opener: Opener,
        group_size: int | None,
        check_tools: bool,
        claim: Claim | None = None,
        url: str = "",
    ) -> tuple[Pending, bool]:
        """A future of this reset's session, and whether it was prefetched. ``group_size``
        fixes G; ``None`` learns it (docs/scale.md, "Group prefetch")."""
        stale: list[Pending] = []
        fut: Pending | None = None
        prefetched = False
        with self._lock:
            if key != self._key:
                if self._key is not None and self._run > 0:
                    self.learned = self._run
                stale, self._key, self._run = self._drop(), key, 0
            self._run += 1
            if self._pool:
                fut, prefetched = self._pool.popleft(), True
                self.stats["used_prefetched"] += 1
            else:
                size = group_size if group_size is not None else (self.learned or 1)
                fut = self._open_group(opener, check_tools, max(1, int(size)), claim, url)
        for old in stale:
            old.discard()  # their places come free as they close
        if fut is None:
            # The cap is full: wait for a place outside the lock (no prefetch: none is free).
            fut = _open(opener, check_tools, _place(claim, url, True))
            with self._lock:
                self.stats["opened"] += 1
        return fut, prefetched

    def _open_group(
        self, opener: Opener, check_tools: bool, size: int, claim: Claim | None, url: str
    ) -> Pending | None:
        """Open this reset's session and up to ``size - 1`` more, into free places only;
        ``None`` when no place is free for the first."""
        places: list[Place | None] = []
        for _ in range(size):
            place = _place(claim, url, False)
            if claim is not None and place is None:
                break
            places.append(place)
        if not places:
            return None
        first = _open(opener, check_tools, places[0])
        self._pool.extend(_open(opener, False, place) for place in places[1:])
        self.stats["opened"] += len(places)
        return first

    def clear(self) -> list[concurrent.futures.Future[Opened]]:
        """Close every unused session and forget the current run; returns their futures."""
        with self._lock:
            stale, self._key, self._run = self._drop(), None, 0
        for old in stale:
            old.discard()
        return [old.future for old in stale]

    def _drop(self) -> list[Pending]:  # under the lock; the caller discards what it held
        stale = list(self._pool)
        self._pool.clear()
        self.stats["discarded"] += len(stale)
        return stale

    @property
    def unused(self) -> int:
        with self._lock:
            return len(self._pool)


def _place(claim: Claim | None, url: str, wait: bool) -> Place | None:
    return None if claim is None else claim(url, wait)


def _open(opener: Opener, fetch_tools: bool, place: Place | None = None) -> Pending:
    """Start opening one session, its place under the cap already taken: every session this
    process opens starts here."""
    return Pending(opener(fetch_tools), place)


def prefetcher(key: Hashable, owner: type) -> Prefetcher:
    """The process's prefetcher for a stream key (fresh after a fork)."""
    return sessions().streams.get(key, lambda: Prefetcher(owner))


def forget() -> list[concurrent.futures.Future[Opened]]:
    """Close every unused prefetched session and forget every learned pattern."""
    return [fut for pf in sessions().streams.clear() for fut in pf.clear()]


def close_sessions(timeout: float = EXIT_BUDGET, of: Callable[[type], bool] | None = None) -> None:
    """Close the held and unused prefetched sessions of the adapter classes ``of`` accepts,
    concurrently, within about ``timeout`` s; without ``of`` (at exit) every session, and
    opens still in flight are cut short."""
    known = sessions()
    stale = [
        fut for _, pf in known.streams.items() if of is None or of(pf.owner) for fut in pf.clear()
    ]
    if of is None:
        opening = known.still_opening()
        for pending in opening:
            pending.discard()
        stale += [pending.future for pending in opening]
    for slot in known.held():
        if of is None or of(slot.owner):
            slot.close(wait=False)
    if stale:
        concurrent.futures.wait(stale, timeout=timeout)
    known.drain(timeout)


at_shutdown(SHUTDOWN_ORDER, lambda _process: close_sessions())

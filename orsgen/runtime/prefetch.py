"""Group prefetch for GRPO's reset pattern.

GRPOTrainer repeats each prompt ``num_generations`` times in a row and calls
``reset(task_index=i)`` serially, on *different* pooled instances of the same class.
Opened one after another, a group of G sessions costs G environment setups. The
prefetcher turns that into one: on the first reset of a group it opens the group's
G sessions concurrently on the shared loop; each later reset of the group takes a
ready (or still opening) session.

State is process-wide and per (adapter class, endpoint, split, secrets, keepalive), kept
by the process's :class:`~orsgen.runtime.process.Runtime`, so any instance in any thread
shares it. Waste is bounded: at
most one group of unused sessions exists at a time, and it is closed as soon as a
reset for a different task arrives, on ``close()`` of any adapter of the class, and
at interpreter exit.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections import deque
from collections.abc import Callable, Coroutine, Hashable
from typing import Any

from orsgen.runtime import sessions
from orsgen.runtime.process import current
from orsgen.runtime.sessions import Opened

Opener = Callable[[bool], Coroutine[Any, Any, Opened]]


class Pending:
    """A session being opened on the runtime loop, which can be discarded at any moment
    without a leak: cut short while opening (the open deletes its own sid), or closed
    once open. ``future`` settles only after that cleanup."""

    def __init__(self, coro: Coroutine[Any, Any, Opened]) -> None:
        self.discarded = False
        self._task: asyncio.Task[Opened] | None = None
        runtime = current()
        self.future: concurrent.futures.Future[Opened] = runtime.submit(self._run(coro))
        runtime.opening(self)

    async def _run(self, coro: Coroutine[Any, Any, Opened]) -> Opened:
        self._task = asyncio.current_task()
        if self.discarded:
            coro.close()
            raise asyncio.CancelledError()
        opened = await coro
        if self.discarded:
            await sessions.close_async(opened.session)
            raise asyncio.CancelledError()
        return opened

    def _cancel_task(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def discard(self) -> None:
        self.discarded = True

        def _close_if_opened(f: concurrent.futures.Future[Opened]) -> None:
            if not f.cancelled() and f.exception() is None:
                sessions.close_later(f.result().session)

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

    def acquire(
        self,
        key: Hashable,
        opener: Opener,
        group_size: int | None,
        check_tools: bool,
    ) -> tuple[Pending, bool]:
        """A future of this reset's session, and whether it was prefetched.

        ``group_size`` fixes G; ``None`` uses the length of the last completed run of
        identical resets (so the first group is opened serially while the pattern is
        learned, and a stream without repeats never prefetches).
        """
        stale: list[Pending] = []
        with self._lock:
            if key != self._key:
                if self._key is not None and self._run > 0:
                    self.learned = self._run
                stale = list(self._pool)
                self._pool.clear()
                self._key = key
                self._run = 0
            self._run += 1
            if self._pool:
                fut = self._pool.popleft()
                self.stats["used_prefetched"] += 1
                prefetched = True
            else:
                size = group_size if group_size is not None else (self.learned or 1)
                size = max(1, int(size))
                fut = Pending(opener(check_tools))
                extra = [Pending(opener(False)) for _ in range(size - 1)]
                self._pool.extend(extra)
                self.stats["opened"] += size
                prefetched = False
            self.stats["discarded"] += len(stale)
        for old in stale:
            old.discard()
        return fut, prefetched

    def clear(self) -> list["concurrent.futures.Future[Opened]"]:
        """Close every unused session (and forget the current run); returns their futures,
        which settle once each open has finished or been cut short."""
        with self._lock:
            stale = list(self._pool)
            self._pool.clear()
            self._key = None
            self._run = 0
            self.stats["discarded"] += len(stale)
        for old in stale:
            old.discard()
        return [old.future for old in stale]

    @property
    def unused(self) -> int:
        with self._lock:
            return len(self._pool)


def get(key: Hashable, owner: type) -> Prefetcher:
    """The process's prefetcher for a stream key (fresh after a fork)."""
    return current().prefetchers.get(key, lambda: Prefetcher(owner))


def forget() -> list["concurrent.futures.Future[Opened]"]:
    """Close every unused prefetched session and forget every learned pattern."""
    return [fut for pf in current().prefetchers.clear() for fut in pf.clear()]

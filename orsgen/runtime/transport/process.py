"""The runtime of one process: its loop, fork, exit, and an ordered list of shutdown hooks.
Each module keeps its per-process state as a *part* (:meth:`Process.part`) and owns its
shutdown step. A forked child starts with a fresh, empty process.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar, cast

from orsgen.runtime.transport.loop import LoopThread

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")
P = TypeVar("P")

LOOP_BUDGET = 2.0

Hook = Callable[["Process"], None]
# (order, hook): run in ascending order at shutdown. Module-level, so a forked child's
# fresh process runs the same steps.
_hooks: list[tuple[int, Hook]] = []


def at_shutdown(order: int, hook: Hook) -> None:
    """Run ``hook(process)`` at shutdown, after every hook of a lower ``order``; it must be
    bounded in time."""
    _hooks.append((order, hook))
    _hooks.sort(key=lambda entry: entry[0])


class Records(Generic[K, V]):
    """Records by key, each made on first use. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[K, V] = {}

    def get(self, key: K, make: Callable[[], V]) -> V:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                found = self._items[key] = make()
            return found

    def items(self) -> list[tuple[K, V]]:
        with self._lock:
            return list(self._items.items())

    def clear(self) -> list[V]:
        with self._lock:
            gone = list(self._items.values())
            self._items.clear()
            return gone


class Process:
    """The runtime of one process. Use :func:`current`, never the constructor."""

    def __init__(self) -> None:
        # Reentrant: an adapter's finalizer (closing its session) may run from garbage
        # collection on a thread that already holds it.
        self._lock = threading.RLock()
        self._loop: LoopThread | None = None
        self._parts: dict[type[Any], Any] = {}

    @property
    def loop(self) -> LoopThread:
        """The process's loop thread, started on first use (and again if it ended)."""
        started = self._loop  # every tool call comes here: no lock while the loop runs
        if started is not None and started.alive():
            return started
        with self._lock:
            if self._loop is None or not self._loop.alive():
                self._loop = LoopThread()
            return self._loop

    def in_loop_thread(self) -> bool:
        started = self._loop
        return started is not None and started.in_thread()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        return self.loop.run(coro, timeout)

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop.loop)

    def part(self, kind: type[P]) -> P:
        """This process's one ``kind()``, made on first use (fresh after a fork)."""
        found = self._parts.get(kind)  # the hot path: made long ago
        if found is None:
            with self._lock:
                found = self._parts.get(kind)
                if found is None:
                    found = self._parts[kind] = kind()
        return cast(P, found)

    def shutdown(self) -> None:
        """Run the shutdown hooks in order, then stop the loop; bounded, never raises."""
        if self._loop is None or self.in_loop_thread():
            return  # nothing ever ran here (or an exit from the loop itself: nothing to wait on)
        for _, hook in list(_hooks):
            try:
                hook(self)
            except Exception:  # noqa: BLE001 - exit must go on
                pass
        with self._lock:
            loop, self._loop = self._loop, None
        loop.stop(LOOP_BUDGET)


_current: Process | None = None
_current_lock = threading.Lock()
_forked = False  # whether this process is a forked child of one that imported the runtime


def forked() -> bool:
    """Whether this process was forked from one that had imported the runtime."""
    return _forked


def current() -> Process:
    """This process's runtime (a fresh one in a forked child)."""
    global _current
    process = _current
    if process is None:
        with _current_lock:
            if _current is None:
                _current = Process()
            process = _current
    return process


# In a forked child: the runtime inherited from the parent, kept and never used. Freeing it
# would run finalizers on kernel objects shared with the parent: an aiohttp connector would
# unregister its sockets from the parent's epoll instance too, and the parent's loop would
# never hear an answer on those connections again.
_inherited: list[Process] = []


def _forget_in_child() -> None:
    # The locks are made new too: a parent thread may have held them mid-fork.
    global _current, _current_lock, _forked
    _forked = True
    if _current is not None:
        _inherited.append(_current)
    _current = None
    _current_lock = threading.Lock()


def _shutdown_at_exit() -> None:
    if _current is not None:
        _current.shutdown()


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(_shutdown_at_exit)

"""Everything the runtime holds in one process, in one object.

The :class:`Runtime` owns the event loop that drives the async openreward SDK, the HTTP
clients, the sessions adapters hold, open or close, the group-prefetch streams, the drift
verdicts, the outage records and the degraded-rollout counts. Every module reaches it
through :func:`current`.

A forked child starts with a fresh, empty runtime: it shares no loop, socket or session
with its parent (``os.register_at_fork``). Interpreter exit shuts the process's runtime
down in one order (:meth:`Runtime.shutdown`).
"""

from __future__ import annotations

import atexit
import concurrent.futures
import os
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Hashable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from orsgen.runtime.loop import LoopThread

if TYPE_CHECKING:
    from orsgen.runtime.drift import DriftState
    from orsgen.runtime.outage import Server
    from orsgen.runtime.prefetch import Pending, Prefetcher
    from orsgen.runtime.sessions import SessionSlot

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

# Upper bound for closing what is left at interpreter exit, and for each later step.
EXIT_BUDGET = 5.0
CLIENTS_BUDGET = 5.0
LOOP_BUDGET = 2.0


class Records(Generic[K, V]):
    """Per-process records by key, each made on first use. Thread-safe."""

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
        """Forget every record; returns them."""
        with self._lock:
            gone = list(self._items.values())
            self._items.clear()
            return gone


class Runtime:
    """The runtime state of one process. Use :func:`current`, never the constructor."""

    def __init__(self) -> None:
        # Reentrant: an adapter's finalizer (closing its session) may run from garbage
        # collection on a thread that already holds it.
        self._lock = threading.RLock()
        self._loop: LoopThread | None = None
        # The HTTP client per server URL; made and used on the loop thread only.
        self.clients: dict[str, Any] = {}
        self.prefetchers: Records[Hashable, Prefetcher] = Records()
        self.servers: Records[str, Server] = Records()
        self.drift: Records[type, DriftState] = Records()
        # Sessions held by adapters, opens in flight (weak: their owners keep them), and
        # background closes not yet done.
        self._held: weakref.WeakSet[SessionSlot] = weakref.WeakSet()
        self._opening: weakref.WeakSet[Pending] = weakref.WeakSet()
        self._closing: set[concurrent.futures.Future[None]] = set()
        # Rollouts per adapter class that ran degraded (the server stayed away too long).
        self._degraded: dict[type, int] = {}

    # -- the loop ------------------------------------------------------------------------

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

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
        """Run a coroutine on the loop and wait for it (see :meth:`LoopThread.run`)."""
        return self.loop.run(coro, timeout)

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule a coroutine on the loop without waiting for it."""
        return self.loop.submit(coro)

    # -- sessions ------------------------------------------------------------------------

    def hold(self, slot: SessionSlot) -> None:
        """Track a slot that holds a session, so exit can close it."""
        with self._lock:
            self._held.add(slot)

    def held(self) -> list[SessionSlot]:
        with self._lock:
            return list(self._held)

    def opening(self, pending: Pending) -> None:
        """Track a session being opened, so exit can cut it short."""
        with self._lock:
            self._opening.add(pending)

    def closing(self, fut: concurrent.futures.Future[None]) -> None:
        """Track a background close until it is done."""
        with self._lock:
            self._closing.add(fut)

        def _done(f: concurrent.futures.Future[None]) -> None:
            with self._lock:
                self._closing.discard(f)

        fut.add_done_callback(_done)

    def drain(self, timeout: float) -> None:
        """Wait for background closes to finish, at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                pending = list(self._closing)
            left = deadline - time.monotonic()
            if not pending or left <= 0:
                return
            concurrent.futures.wait(pending, timeout=left)

    # -- outages -------------------------------------------------------------------------

    def count_degraded(self, cls: type) -> None:
        with self._lock:
            self._degraded[cls] = self._degraded.get(cls, 0) + 1

    def degraded(self, cls: type) -> int:
        """Rollouts of ``cls`` and its subclasses that ran degraded in this process."""
        with self._lock:
            return sum(n for klass, n in self._degraded.items() if issubclass(klass, cls))

    # -- shutdown ------------------------------------------------------------------------

    def close_sessions(
        self, timeout: float = EXIT_BUDGET, of: Callable[[type], bool] | None = None
    ) -> None:
        """Stop prefetching and close sessions, concurrently, within about ``timeout``
        seconds: the held and unused prefetched sessions of the adapter classes that ``of``
        accepts. Without ``of`` (at exit) every session, and opens still in flight are cut
        short."""
        stale = [
            fut
            for _, pf in self.prefetchers.items()
            if of is None or of(pf.owner)
            for fut in pf.clear()
        ]
        if of is None:
            with self._lock:
                opening = [p for p in self._opening if not p.future.done()]
            for pending in opening:
                pending.discard()
            stale += [pending.future for pending in opening]
        for slot in self.held():
            if of is None or of(slot.owner):
                slot.close(wait=False)
        if stale:
            concurrent.futures.wait(stale, timeout=timeout)
        self.drain(timeout)

    def close_clients(self) -> None:
        """Close the HTTP clients (after the sessions that use them)."""
        if self.clients:
            self.run(self._close_clients(), timeout=CLIENTS_BUDGET)

    async def _close_clients(self) -> None:
        while self.clients:
            _, client = self.clients.popitem()
            await client.close()

    def shutdown(self) -> None:
        """The one exit order: stop prefetching and close every session, then the HTTP
        clients they used, then the loop. Each step is bounded; none raises."""
        if self._loop is None or self.in_loop_thread():
            return  # nothing ever ran here (or an exit from the loop itself: nothing to wait on)
        steps: list[Callable[[], None]] = [self.close_sessions, self.close_clients, self._stop_loop]
        for step in steps:
            try:
                step()
            except Exception:  # noqa: BLE001 - exit must go on
                pass

    def _stop_loop(self) -> None:
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.stop(LOOP_BUDGET)


_current: Runtime | None = None
_current_lock = threading.Lock()


def current() -> Runtime:
    """This process's runtime (a fresh one in a forked child)."""
    global _current
    runtime = _current
    if runtime is None:
        with _current_lock:
            if _current is None:
                _current = Runtime()
            runtime = _current
    return runtime


def _forget_in_child() -> None:
    """After a fork: the parent's loop thread, sockets and sessions are not the child's.
    The locks are made new too, since a parent thread may have held them mid-fork."""
    global _current, _current_lock
    _current = None
    _current_lock = threading.Lock()


def _shutdown_at_exit() -> None:
    if _current is not None:
        _current.shutdown()


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(_shutdown_at_exit)

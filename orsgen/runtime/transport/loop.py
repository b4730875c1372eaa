"""The background event loop of the async openreward SDK: one shared loop lets sessions open
concurrently, bounds every call and keeps keepalive pings alive between tool calls.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from orsgen.runtime.errors import CallTimeout

T = TypeVar("T")


class _ExitSafeExecutor(concurrent.futures.ThreadPoolExecutor):
    """The runtime loop's default executor, which past shutdown runs the (small) job inline:
    aiohttp (``trust_env``) looks up proxies in the executor on every request, and the
    standard executors refuse work at exit, which would fail the exit hook's deletes."""

    def submit(
        self, fn: Callable[..., T], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[T]:
        try:
            return super().submit(fn, *args, **kwargs)
        except RuntimeError:
            done: concurrent.futures.Future[T] = concurrent.futures.Future()
            try:
                done.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - delivered through the future
                done.set_exception(exc)
            return done


class _Handoff:
    """One blocking :meth:`LoopThread.run`, woken by a plain lock (cheaper than a future)."""

    __slots__ = ("coro", "done", "task", "error")

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.done = threading.Lock()
        self.done.acquire()
        self.task: asyncio.Task[Any] | None = None
        self.error: Exception | None = None

    def start(self) -> None:  # on the loop
        try:
            self.task = asyncio.get_running_loop().create_task(self.coro)
        except Exception as exc:  # noqa: BLE001 - the waiting thread raises it
            self.error = exc
            self.done.release()
            return
        self.task.add_done_callback(lambda _: self.done.release())

    def cancel(self) -> None:  # on the loop, always after start (the loop keeps their order)
        if self.task is not None:
            self.task.cancel()


async def _cancel_the_rest() -> None:
    me = asyncio.current_task()
    rest = [task for task in asyncio.all_tasks() if task is not me]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


class LoopThread:
    """An asyncio loop running forever on a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_default_executor(
            _ExitSafeExecutor(max_workers=4, thread_name_prefix="orsgen-runtime-io")
        )
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="orsgen-runtime-loop", daemon=True
        )
        self.thread.start()

    def alive(self) -> bool:
        return self.thread.is_alive()

    def in_thread(self) -> bool:
        return threading.current_thread() is self.thread

    def call_soon(self, callback: Callable[[], object]) -> None:
        self.loop.call_soon_threadsafe(callback)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run a coroutine on the loop for at most ``timeout`` (finite) seconds; past it the
        coroutine is cancelled and :class:`CallTimeout` raised."""
        if self.in_thread():
            coro.close()
            raise RuntimeError("orsgen runtime: blocking call made from the runtime loop thread")
        if not 0 <= timeout < math.inf:  # NaN, infinite, or negative (-1 would wait forever)
            coro.close()
            raise ValueError(f"orsgen runtime: a wait needs a finite timeout, got {timeout!r}")
        handoff = _Handoff(coro)
        self.loop.call_soon_threadsafe(handoff.start)
        if not handoff.done.acquire(timeout=timeout):
            self.loop.call_soon_threadsafe(handoff.cancel)
            raise CallTimeout(f"no answer within {timeout:g} s")
        if handoff.error is not None:
            raise handoff.error
        task = handoff.task
        if task is None or task.cancelled():  # cancelled on the loop (its shutdown): an
            raise concurrent.futures.CancelledError()  # Exception, as run_coroutine_threadsafe
        result: T = task.result()
        return result

    def stop(self, timeout: float) -> None:
        """Cancel what runs, stop the loop and its thread (about ``timeout`` s each)."""
        try:
            self.run(_cancel_the_rest(), timeout)
        except Exception:  # noqa: BLE001 - stopping goes on regardless
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout)
        if not self.thread.is_alive():
            self.loop.close()

"""One background event loop per process that drives the async openreward SDK.

The SDK is asyncio-based. Running every adapter's coroutines on one shared loop
lets sessions open concurrently, gives every call a bounded timeout, and keeps
the SDK's keepalive pings alive between tool calls.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_pid: int | None = None
# Run at interpreter exit in order: sessions close (priority 0) before the HTTP
# clients they use (priority 1).
_shutdown_hooks: list[tuple[int, Callable[[], None]]] = []


def on_shutdown(hook: Callable[[], None], priority: int) -> None:
    _shutdown_hooks.append((priority, hook))


def _shutdown() -> None:
    if _loop is None or _pid != os.getpid():
        return
    for _, hook in sorted(_shutdown_hooks, key=lambda item: item[0]):
        try:
            hook()
        except Exception:  # noqa: BLE001 - exit must go on
            pass


atexit.register(_shutdown)


class _ExitSafeExecutor(concurrent.futures.ThreadPoolExecutor):
    """The runtime loop's default executor. aiohttp (``trust_env``) looks up proxy and
    netrc settings in the executor on every request; at interpreter exit the standard
    executors refuse new work, which would silently fail the exit hook's session
    deletes. Past shutdown this one runs the (small) job inline instead."""

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


def get_loop() -> asyncio.AbstractEventLoop:
    """Return the process's runtime loop, starting it on first use (and after a fork)."""
    global _loop, _thread, _pid
    with _lock:
        if _loop is None or _pid != os.getpid() or _thread is None or not _thread.is_alive():
            _loop = asyncio.new_event_loop()
            _loop.set_default_executor(
                _ExitSafeExecutor(max_workers=4, thread_name_prefix="orsgen-runtime-io")
            )
            _thread = threading.Thread(
                target=_loop.run_forever, name="orsgen-runtime-loop", daemon=True
            )
            _thread.start()
            _pid = os.getpid()
        return _loop


def in_loop_thread() -> bool:
    return _thread is not None and threading.current_thread() is _thread


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Schedule a coroutine on the runtime loop without waiting for it."""
    return asyncio.run_coroutine_threadsafe(coro, get_loop())


class _Handoff:
    """One blocking :func:`run`: the loop starts the coroutine as a task and releases a
    held lock when it is done. A plain lock wakes the waiting thread with less work than
    ``run_coroutine_threadsafe``'s future and condition, on the path of every tool call."""

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
        self.task.add_done_callback(self._finished)

    def _finished(self, _task: asyncio.Task[Any]) -> None:
        self.done.release()

    def cancel(self) -> None:  # on the loop, always after start (the loop keeps their order)
        if self.task is not None:
            self.task.cancel()


def run(coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
    """Run a coroutine on the runtime loop and wait at most ``timeout`` seconds.

    On timeout the coroutine is cancelled and ``TimeoutError`` is raised, so a
    hung server can never hang the trainer.
    """
    if in_loop_thread():
        coro.close()
        raise RuntimeError("orsgen runtime: blocking call made from the runtime loop thread")
    handoff = _Handoff(coro)
    runtime_loop = get_loop()
    runtime_loop.call_soon_threadsafe(handoff.start)
    if not handoff.done.acquire(timeout=-1 if timeout is None else timeout):
        runtime_loop.call_soon_threadsafe(handoff.cancel)
        raise TimeoutError(f"no answer within {timeout:g} s")
    if handoff.error is not None:
        raise handoff.error
    task = handoff.task
    if task is None or task.cancelled():  # cancelled on the loop (its shutdown): an Exception,
        raise concurrent.futures.CancelledError()  # as run_coroutine_threadsafe raises it
    result: T = task.result()
    return result

"""orsgen/runtime/transport/loop.py: the blocking hand-off (``LoopThread.run``, through
``Process.run``), which every sync tool call and reset goes through: results and errors
come back to the calling thread, a timeout cancels the coroutine on the loop, and nothing
but an ``Exception`` ever escapes. The process's life (fork, shutdown):
tests/test_runtime_process.py."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading

import pytest

from orsgen.runtime.errors import CallTimeout
from orsgen.runtime.transport.process import current


async def _value(x: int) -> int:
    await asyncio.sleep(0)
    return x * 2


async def _boom() -> None:
    raise ValueError("server said no")


def test_result_and_error_come_back() -> None:
    assert current().run(_value(21), timeout=5) == 42
    with pytest.raises(ValueError, match="server said no"):
        current().run(_boom(), timeout=5)


def test_timeout_cancels_the_coroutine_on_the_loop() -> None:
    cancelled = threading.Event()

    async def hang() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(CallTimeout, match="no answer within 0.2 s"):
        current().run(hang(), timeout=0.2)
    assert cancelled.wait(5)


def test_cancel_on_the_loop_is_an_exception_for_the_caller() -> None:
    """A task cancelled by the loop's own shutdown must not reach the trainer as a
    BaseException (``asyncio.CancelledError``), which ``except Exception`` would miss."""

    async def cancelled_soon() -> None:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().call_soon(task.cancel)
        await asyncio.sleep(60)

    with pytest.raises(concurrent.futures.CancelledError) as info:
        current().run(cancelled_soon(), timeout=5)
    assert isinstance(info.value, Exception)


def test_many_threads_at_once() -> None:
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(lambda i: current().run(_value(i), timeout=5), range(200))) == [
            2 * i for i in range(200)
        ]


def test_refused_on_the_loop_thread() -> None:
    async def nested() -> str:
        coro = _value(1)
        try:
            current().run(coro, timeout=1)
        except RuntimeError as exc:
            return str(exc)
        return "no error"

    assert "runtime loop thread" in current().run(nested(), timeout=5)


def test_what_the_loop_cannot_start_is_raised_to_the_caller() -> None:
    with pytest.raises(TypeError):
        current().run(42, timeout=5)  # type: ignore[arg-type]  # lost, it would time out instead


@pytest.mark.parametrize("timeout", [-1, float("inf"), float("nan")])
def test_every_wait_has_a_finite_timeout(timeout: float) -> None:
    """No wait for the loop is unbounded (``timeout`` is a float, never ``None``; and -1
    would mean forever to the lock underneath)."""
    coro = _value(1)
    with pytest.raises(ValueError, match="finite timeout"):
        current().run(coro, timeout=timeout)
    assert coro.cr_frame is None  # closed, never left pending

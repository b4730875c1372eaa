"""orsgen/runtime/transport/process.py: the per-process runtime. A forked child gets its own; each
module's part is one instance per process; shutdown runs the hooks in their order, then
stops the loop, and leaves the process usable again."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable

import pytest

import ors_server
from orsgen.runtime.transport import http, process
from orsgen.runtime.transport.process import Process, current


async def _value(x: int) -> int:
    await asyncio.sleep(0)
    return x * 2


class Part:
    made = 0

    def __init__(self) -> None:
        Part.made += 1


def test_a_forked_child_gets_its_own_runtime() -> None:
    """The child must not use its parent's loop thread (it does not exist there) or its
    parent's sessions and clients."""
    parent = current()
    parent_thread = parent.loop.thread
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running the parent's exit hooks
        ok = 0
        try:
            child = current()
            fresh = child is not parent and child.loop.thread is not parent_thread
            ok = int(fresh and child.run(_value(4), timeout=5) == 8)
        finally:
            os.write(write, str(ok).encode())
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        assert answer.read() == "1"
    os.waitpid(pid, 0)
    assert current() is parent and parent.run(_value(1), timeout=5) == 2


async def _environments(url: str) -> list[str]:
    async with http.client(url).get("/list_environments") as response:
        return list(await response.json())


def _fork_and_exit() -> None:  # multiprocessing's "fork" start method, a DataLoader worker
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def _run_with_preexec_fn() -> None:  # a fork, then exec (as tests/test_cli_interrupt.py runs)
    subprocess.run([sys.executable, "-c", "pass"], preexec_fn=lambda: None, timeout=60)


@pytest.mark.parametrize("fork", [_fork_and_exit, _run_with_preexec_fn])
def test_a_forked_child_leaves_the_parents_connections_alone(
    echo_server: ors_server.RunningServer, fork: Callable[[], None]
) -> None:
    """The kernel shares the loop's epoll instance between parent and child. A child that
    tore down the runtime it inherited would close the HTTP client's pooled connections and
    so unregister their sockets from the parent's epoll: the parent's next request on one
    would wait for an answer its loop never hears (the suite's order-dependent hang)."""
    assert current().run(_environments(echo_server.url), timeout=10) == ["echoenv"]
    fork()
    assert current().run(_environments(echo_server.url), timeout=10) == ["echoenv"]


def test_shutdown_stops_the_loop_and_the_runtime_starts_again() -> None:
    runtime = current()
    first = runtime.loop
    runtime.shutdown()
    assert not first.alive()
    assert runtime.run(_value(3), timeout=5) == 6 and runtime.loop is not first


def test_a_part_is_made_once_per_process() -> None:
    first, second = Process(), Process()
    before = Part.made
    assert first.part(Part) is first.part(Part)
    assert second.part(Part) is not first.part(Part)
    assert Part.made == before + 2


def test_shutdown_runs_the_hooks_in_order_then_stops_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(process, "_hooks", [])
    ran: list[str] = []
    proc = Process()
    loop = proc.loop

    def failing(p: Process) -> None:
        ran.append("failing")
        raise RuntimeError("a hook that fails does not stop the others")

    def clients(p: Process) -> None:
        ran.append(f"clients, loop alive: {loop.alive()}")  # the one started above

    process.at_shutdown(20, clients)
    process.at_shutdown(10, lambda p: ran.append("sessions"))
    process.at_shutdown(15, failing)
    proc.shutdown()
    assert ran == ["sessions", "failing", "clients, loop alive: True"]
    assert not loop.alive()


def test_shutdown_of_a_process_that_never_ran_does_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(process, "_hooks", [])
    ran: list[int] = []
    process.at_shutdown(1, lambda p: ran.append(1))
    Process().shutdown()
    assert ran == []

"""Issue 5 item 4: no leaked sessions. Sessions close on reset(), close(), garbage
collection of the adapter (a weakref.finalize, no resurrection) and interpreter exit,
including prefetched sessions nobody took and sessions still opening. Counted on the
server."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import time
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

import ors_server
from envs.runtime_support import FAULT_ENV
from generated.echo import EchoEnv
import runtime_hooks

ROOT = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.usefixtures("fresh_runtime")


@pytest.fixture(scope="module")
def fault_server() -> Iterator[ors_server.RunningServer]:
    server = ors_server.start(FAULT_ENV)
    try:
        yield server
    finally:
        server.stop()


def test_reset_and_close_end_sessions(echo_server) -> None:
    base = echo_server.open_sessions()
    env = EchoEnv(base_url=echo_server.url, prefetch=False)
    for task in (0, 1, 2, 3, 0):
        env.reset(task_index=task)
        assert echo_server.wait_sessions(base + 1) == base + 1
    env.close()
    assert echo_server.wait_sessions(base) == base
    env.close()  # idempotent
    assert env.echo(text="apple").startswith("Error: no open session")
    assert env.rewards == [None]


def test_a_forked_child_leaves_its_parents_session_alone(echo_server) -> None:
    """A child forked from a process that holds a session gets a fresh runtime; closing
    its copy of the adapter must not delete the session the parent still uses."""
    base = echo_server.open_sessions()
    env = EchoEnv(base_url=echo_server.url, prefetch=False)
    env.reset(task_index=0)
    pid = os.fork()
    if pid == 0:
        try:
            env.close()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert echo_server.open_sessions() == base + 1
    assert env.echo(text="apple") == "echo: apple"
    env.close()
    assert echo_server.wait_sessions(base) == base


def test_garbage_collection_closes_the_session(echo_server) -> None:
    base = echo_server.open_sessions()
    envs = [EchoEnv(base_url=echo_server.url, group_size=2) for _ in range(4)]
    for i, env in enumerate(envs):
        env.reset(task_index=i // 2)
    assert echo_server.wait_sessions(base + 4) == base + 4
    refs = [weakref.ref(env) for env in envs]
    finalizers = [env._finalizer for env in envs]
    del env, envs
    gc.collect()
    assert all(r() is None for r in refs)  # collected, not resurrected
    assert not any(f.alive for f in finalizers)  # each finalizer ran once
    runtime_hooks.drain()
    assert echo_server.wait_sessions(base) == base


def _run_child(code: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )


def test_interpreter_exit_closes_everything(echo_server) -> None:
    base = echo_server.open_sessions()
    child = _run_child(
        f"""
        from generated.echo import EchoEnv
        envs = [EchoEnv(base_url={echo_server.url!r}, group_size=4) for _ in range(3)]
        for env in envs:
            env.reset(task_index=1)        # 3 held + 1 prefetched and never taken
        other = EchoEnv(base_url={echo_server.url!r}, prefetch=False)
        other.reset(task_index=2)
        other.echo(text="cherry")
        print("OPEN", flush=True)
        # exit without close(): the runtime's exit hook must close all five
        """
    )
    assert child.returncode == 0, child.stderr
    assert "OPEN" in child.stdout
    assert echo_server.wait_sessions(base) == base


def test_exit_while_sessions_are_still_opening(fault_server) -> None:
    base = fault_server.open_sessions()
    fault_server.reset_counts()
    child = _run_child(
        f"""
        import json, threading, time, urllib.request
        from envs.runtime_support import FaultAdapter
        env = FaultAdapter(base_url={fault_server.url!r}, group_size=3)
        spec = {{"name": "slow", "setup_delay": 30}}
        threading.Thread(target=lambda: env.reset(task_spec=spec), daemon=True).start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until three sessions sit in setup() on the server
            with urllib.request.urlopen({fault_server.url!r} + "/faultenv/_stats") as r:
                if json.loads(r.read())["sessions"] >= {base} + 3:
                    break
            time.sleep(0.1)
        print("EXITING", flush=True)
        """
    )
    assert child.returncode == 0, child.stderr
    assert "EXITING" in child.stdout
    assert fault_server.requests().get("POST /create", 0) == 3
    assert fault_server.wait_sessions(base) == base


def test_unused_prefetch_closed_by_close(echo_server) -> None:
    base = echo_server.open_sessions()
    env = EchoEnv(base_url=echo_server.url, group_size=5)
    env.reset(task_index=3)
    assert echo_server.wait_sessions(base + 5) == base + 5
    env.close()
    assert echo_server.wait_sessions(base) == base

"""No leaked sessions (orsgen/runtime/sessions/pool.py), counted by the server itself. Sessions close on reset(), close(),
garbage collection of the adapter (a weakref.finalize, no resurrection) and interpreter
exit, including prefetched sessions nobody took and sessions still opening; ``load_tasks``
opens none. (Probe sessions of a snapshot: tests/test_snapshot_probes.py.)"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import weakref

import ors_server
import pytest
import runtime_hooks
from conftest import ECHO_ENV, ROOT, failed
from envs.runtime_support import FAULT_ENV

from generated.echo import EchoEnv, load_tasks

pytestmark = [pytest.mark.usefixtures("fresh_runtime"), pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers.own(ECHO_ENV)  # the suite's own: no other test's sessions are counted


@pytest.fixture(scope="module")
def fault_server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(FAULT_ENV)


@pytest.fixture(autouse=True)
def starts_empty(server: ors_server.RunningServer) -> None:
    """Every test begins where the previous one must have left the server: no session."""
    assert server.wait_sessions(0) == 0


def test_reset_closes_the_previous_session(server) -> None:
    envs = [EchoEnv(base_url=server.url, prefetch=False) for _ in range(3)]
    for i, env in enumerate(envs):
        env.reset(task_index=i)
    assert server.wait_sessions(3) == 3  # one session per adapter
    for task in (0, 1, 2, 3, 0):
        envs[0].reset(task_index=task)
        assert server.wait_sessions(3) == 3
    for env in envs:
        env.close()


def test_a_forked_child_leaves_its_parents_session_alone(server) -> None:
    """A child forked from a process that holds a session gets a fresh runtime; closing
    its copy of the adapter must not delete the session the parent still uses."""
    env = EchoEnv(base_url=server.url, prefetch=False)
    env.reset(task_index=0)
    pid = os.fork()
    if pid == 0:
        try:
            env.close()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert server.open_sessions() == 1
    assert env.echo(text="apple") == "echo: apple"
    env.close()
    assert server.wait_sessions(0) == 0


def test_close_ends_the_session_and_is_idempotent(server) -> None:
    envs = [EchoEnv(base_url=server.url, prefetch=False) for _ in range(3)]
    for i, env in enumerate(envs):
        env.reset(task_index=i)
    envs[1].echo(text="banana")
    for env in envs:
        env.close()
    assert server.wait_sessions(0) == 0
    envs[0].close()  # closing twice is harmless
    assert "no open session; call reset() first" in str(failed(envs[0].echo, text="apple"))
    assert envs[0].rewards == [None]


def test_garbage_collection_closes_the_session(server) -> None:
    envs = [EchoEnv(base_url=server.url, group_size=2) for _ in range(4)]
    for i, env in enumerate(envs):
        env.reset(task_index=i // 2)
    envs[0].echo(text="apple")  # a session that served a call is collected the same way
    assert server.wait_sessions(4) == 4
    refs = [weakref.ref(env) for env in envs]
    finalizers = [env._finalizer for env in envs]
    del env, envs
    gc.collect()
    assert all(r() is None for r in refs)  # collected, not resurrected
    assert not any(f.alive for f in finalizers)  # each finalizer ran once
    runtime_hooks.drain()
    assert server.wait_sessions(0) == 0


def _run_child(code: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_interpreter_exit_closes_everything(server) -> None:
    child = _run_child(f"""
        from generated.echo import EchoEnv
        envs = [EchoEnv(base_url={server.url!r}, group_size=4) for _ in range(3)]
        for env in envs:
            env.reset(task_index=1)        # 3 held + 1 prefetched and never taken
        other = EchoEnv(base_url={server.url!r}, prefetch=False)
        other.reset(task_index=2)
        print(other.echo(text="cherry"), flush=True)
        # exit without close(): the runtime's exit hook must close all five
        """)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "echo: cherry"
    assert "Traceback" not in child.stderr
    assert server.wait_sessions(0) == 0


@pytest.mark.slow
def test_exit_while_sessions_are_still_opening(fault_server) -> None:
    base = fault_server.open_sessions()
    fault_server.reset_counts()
    child = _run_child(f"""
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
        """)
    assert child.returncode == 0, child.stderr
    assert "EXITING" in child.stdout
    assert fault_server.requests().get("POST /create", 0) == 3
    assert fault_server.wait_sessions(base) == base


def test_unused_prefetch_closed_by_close(server) -> None:
    env = EchoEnv(base_url=server.url, group_size=5)
    env.reset(task_index=3)
    assert server.wait_sessions(5) == 5
    env.close()
    assert server.wait_sessions(0) == 0


def test_load_tasks_opens_no_session(server) -> None:
    server.reset_counts()
    assert load_tasks(base_url=server.url).num_rows == 4
    assert server.requests().get("POST /create", 0) == 0
    assert server.open_sessions() == 0


def test_adapters_a_function_drops_are_collected_while_it_goes_on(server) -> None:
    """The runtime reads TRL's stack (trainer_facts) when an adapter is built and at each
    reset: it must not keep the locals of the function that built them (on Python 3.11 and
    3.12 reading a frame's ``f_locals`` stores them on the frame), so adapters it drops are
    collected and their sessions closed while it goes on."""
    envs = []
    for i in range(4):
        envs.append(EchoEnv(base_url=server.url, prefetch=False))
        envs[-1].reset(task_index=i)
    assert server.wait_sessions(4) == 4
    refs = [weakref.ref(env) for env in envs]
    del envs
    gc.collect()
    assert [r() is None for r in refs] == [True] * 4
    runtime_hooks.drain()
    assert server.wait_sessions(0) == 0

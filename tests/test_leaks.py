"""No leaked sessions: the server's own count of live sessions drops to zero after
adapters are closed, dropped and collected, or left open in a process that exits.
Probe sessions opened while snapshotting and ``load_tasks`` leave none either."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

import pytest

import ors_server
from conftest import ECHO_ENV, ROOT
from generated.echo import EchoEnv, load_tasks

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def server():
    # A server of its own, so no other test's sessions are counted.
    running = ors_server.start(ECHO_ENV)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(autouse=True)
def starts_empty(server):
    assert server.wait_sessions(0) == 0
    yield


def test_closed_adapters_leave_no_session(server) -> None:
    envs = [EchoEnv(base_url=server.url) for _ in range(3)]
    for i, env in enumerate(envs):
        env.reset(task_index=i)
    assert server.wait_sessions(3) == 3
    # reset() closes the previous session before opening the next.
    for _ in range(3):
        envs[0].reset(task_index=1)
    assert server.wait_sessions(3) == 3
    envs[1].echo(text="banana")
    for env in envs:
        env.close()
    assert server.wait_sessions(0) == 0
    envs[0].close()  # closing twice is harmless


def test_a_dropped_adapter_closes_its_session(server) -> None:
    env = EchoEnv(base_url=server.url)
    env.reset(task_index=0)
    env.echo(text="apple")
    assert server.wait_sessions(1) == 1
    del env
    gc.collect()
    assert server.wait_sessions(0) == 0


def test_a_process_that_exits_without_closing_leaves_no_session(server) -> None:
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from generated.echo import EchoEnv
        keep = [EchoEnv(base_url={server.url!r}) for _ in range(2)]
        keep[0].reset(task_index=0)
        keep[1].reset(task_index=2)
        print(keep[0].echo(text="apple"), flush=True)
        # exit without close()
        """)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=90, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "echo: apple"
    assert "Traceback" not in proc.stderr
    assert server.wait_sessions(0) == 0


def test_load_tasks_opens_no_session(server) -> None:
    server.reset_counts()
    assert load_tasks(base_url=server.url).num_rows == 4
    calls = server.requests()
    assert calls.get("POST /create", 0) == 0
    assert server.open_sessions() == 0


def test_snapshot_probes_leave_no_session(server, orsgen_cli, tmp_path) -> None:
    server.reset_counts()
    run = orsgen_cli(
        [
            server.url,
            "-o",
            str(tmp_path / "probe_leak"),
            "--probe-index",
            "0",
            "--probe-index",
            "1",
            "--probe-index",
            "2",
            "-q",
        ]
    )
    assert run.code == 0, run.stderr
    assert server.requests().get("POST /create", 0) == 3
    assert server.wait_sessions(0) == 0

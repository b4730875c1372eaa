"""The adapter's fault tolerance with bounded timeouts (orsgen/runtime/adapter.py).

Every failure in a rollout raises a ToolEnvironmentError (TRL counts it and shows the
model its text) with a None step reward, returns within the configured timeout (plus a margin for a loaded
2-core machine), leaks nothing on the server, and the next reset() recovers once the
server is back. A reset() that cannot open a session raises SessionOpenError naming
the task and the server. Real openreward servers throughout; the HTTP 500 and cut
SSE stream come from a raw-socket proxy in front of a real server.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

import ors_server
from conftest import failed
from envs.runtime_support import FAULT_ENV, FaultAdapter, FaultProxy

from orsgen.runtime.adapter import SessionOpenError

MARGIN = 4.0  # scheduling slack on a shared 2-core machine; far below any hang


pytestmark = pytest.mark.usefixtures("fresh_runtime")


@pytest.fixture(scope="module")
def server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(FAULT_ENV)


@pytest.fixture()
def proxy(server: ors_server.RunningServer) -> Iterator[FaultProxy]:
    port = int(server.url.rsplit(":", 1)[1])
    p = FaultProxy(port)
    try:
        yield p
    finally:
        p.close()


def _timed(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    start = time.monotonic()
    out = fn(*args, **kwargs)
    return out, time.monotonic() - start


def test_tool_raising_on_the_server(server) -> None:
    env = FaultAdapter(base_url=server.url, prefetch=False, timeout=10)
    env.reset(task_index=0)
    failure = failed(env.boom)
    out = str(failure)
    assert out.startswith(
        "tool 'boom' failed in the environment (tool_raised): the tool raised on the server"
    ), out
    assert "blew up on purpose" in out and failure.environment_failed
    assert env.last_output == f"Error: {out}"
    assert env.rewards == [None] and env.reward is None
    # The SDK ends the session after a raising tool; later calls say so.
    assert str(failed(env.ok)).startswith("tool 'ok' failed in the environment")
    assert "Fault task t1" in env.reset(task_index=1)
    assert env.ok(text="again") == "ok again" and env.rewards == [1.0]
    env.close()
    assert server.wait_sessions(0) == 0


def test_tool_exceeding_the_timeout(server) -> None:
    env = FaultAdapter(base_url=server.url, prefetch=False, timeout=1.5)
    env.reset(task_index=0)
    failure, took = _timed(failed, env.slow, seconds=30)
    assert took < 1.5 + MARGIN
    assert str(failure) == (
        "tool 'slow' failed in the environment (timeout): no answer within 1.5 s from "
        f"faultenv at {server.url}"
    ), failure
    assert failure.reason == "timeout"
    assert env.rewards == [None]
    assert env.ok(text="still") == "ok still"  # the session survives a slow call
    env.close()
    assert server.wait_sessions(0) == 0


def test_http_500(server, proxy) -> None:
    env = FaultAdapter(base_url=proxy.url, prefetch=False, timeout=10)
    env.reset(task_index=0)
    proxy.mode = "500"
    failure, took = _timed(failed, env.ok, text="x")
    assert took < 10 + MARGIN
    assert str(failure) == (
        "tool 'ok' failed in the environment (server_error): HTTP 500: injected by the fault proxy"
    ), failure
    assert proxy.injected == 1  # a 500 is not retried: the tool may have run
    assert env.rewards == [None]
    proxy.mode = "pass"
    assert env.ok(text="y") == "ok y"
    env.close()
    assert server.wait_sessions(0) == 0


def test_sse_stream_cut_mid_answer_is_resumed(server, proxy) -> None:
    env = FaultAdapter(base_url=proxy.url, prefetch=False, timeout=10)
    env.reset(task_index=0)
    server.reset_counts()
    proxy.mode = "cut_once"
    # The stream breaks after the task_id event; the SDK resumes the same server task.
    assert env.slow(seconds=0.5) == "slept"
    assert proxy.cut == 1 and env.rewards == [0.5]
    assert server.requests()["POST /faultenv/call"] == 2
    env.close()
    assert server.wait_sessions(0) == 0


def test_sse_stream_cut_every_time_is_bounded(server, proxy) -> None:
    env = FaultAdapter(base_url=proxy.url, prefetch=False, timeout=3)
    env.reset(task_index=0)
    proxy.mode = "cut"
    failure, took = _timed(failed, env.slow, seconds=0.5)
    assert took < 3 + MARGIN
    assert str(failure).startswith(
        "tool 'slow' failed in the environment (timeout): no answer within 3 s"
    ), failure
    assert proxy.cut >= 1 and env.rewards == [None]
    env.close()
    assert server.wait_sessions(0) == 0


@pytest.mark.slow
def test_server_killed_mid_rollout_then_restarted(ors_servers: ors_server.Servers) -> None:
    srv = ors_servers.own(FAULT_ENV)  # the test kills it
    port = int(srv.url.rsplit(":", 1)[1])
    try:
        # No reconnect window, strict: a reset while the server is down raises at once
        # (the window and degradation are tests/test_runtime_health_outage.py's subject).
        env = FaultAdapter(
            base_url=srv.url,
            prefetch=False,
            timeout=4,
            open_timeout=8,
            reconnect_for=0,
            strict=True,
        )
        env.reset(task_index=0)
        failure, took = _timed(failed, env.die)  # the tool kills its own server mid-call
        assert took < 4 + MARGIN
        assert str(failure).startswith("tool 'die' failed in the environment"), failure
        assert env.rewards == [None]
        assert srv.process.wait(timeout=10) == 17
        # While the server is down, reset() raises a clear, bounded error.
        start = time.monotonic()
        with pytest.raises(SessionOpenError) as info:
            env.reset(task_index=3)
        assert time.monotonic() - start < 8 + MARGIN
        text = str(info.value)
        assert "task 3 of split 'train'" in text and srv.url in text, text
        # The server comes back on the same port: the next reset recovers.
        srv = ors_servers.own(FAULT_ENV, port=port)
        assert "Fault task t2" in env.reset(task_index=2)
        assert env.ok(text="back") == "ok back"
        env.close()
        assert srv.wait_sessions(0) == 0
    finally:
        srv.stop()


@pytest.mark.slow
def test_server_restart_between_rollouts(ors_servers: ors_server.Servers) -> None:
    srv = ors_servers.own(FAULT_ENV)  # the test restarts it
    port = int(srv.url.rsplit(":", 1)[1])
    try:
        envs = [FaultAdapter(base_url=srv.url, group_size=2) for _ in range(2)]
        for env in envs:
            env.reset(task_index=0)
            assert env.ok(text="one") == "ok one"
        srv.stop()
        srv = ors_servers.own(FAULT_ENV, port=port)
        for env in envs:  # stale keep-alive connections and dead sessions on the old server
            assert "Fault task t1" in env.reset(task_index=1)
            assert env.ok(text="two") == "ok two"
        assert srv.wait_sessions(2) == 2
        for env in envs:
            env.close()
        assert srv.wait_sessions(0) == 0
    finally:
        srv.stop()


def test_open_failure_names_task_and_server(server) -> None:
    env = FaultAdapter(base_url=server.url, prefetch=False, open_timeout=10)
    with pytest.raises(SessionOpenError) as info:
        env.reset(task_index=99)  # no such task: the server answers 400
    text = str(info.value)
    assert "task 99 of split 'train'" in text and server.url in text and "HTTP 400" in text, text
    assert server.wait_sessions(0) == 0  # the half-open session was deleted


def test_open_timeout_is_bounded_and_leaves_nothing(server) -> None:
    env = FaultAdapter(base_url=server.url, group_size=3, open_timeout=1.5)
    start = time.monotonic()
    with pytest.raises(SessionOpenError, match="open_timeout=1.5"):
        env.reset(task_spec={"name": "slowsetup", "setup_delay": 30})
    assert time.monotonic() - start < 1.5 + MARGIN
    env.close()  # the group's two other sessions were still in setup()
    assert server.wait_sessions(0) == 0

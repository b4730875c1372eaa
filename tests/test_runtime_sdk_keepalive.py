"""Keepalive pings (orsgen/runtime/transport/sdk.py's session wrapper): a rollout idle for longer than the server's stale-session threshold
keeps its session. The server's reaper is shortened to 3 s; the idle is ~2x that.
The SDK's own 10 s ping is too slow for that server (the control case loses its
session); ``keepalive=1`` pings often enough."""

from __future__ import annotations

import time

import ors_server
import pytest
import runtime_hooks
from conftest import failed
from envs.runtime_support import FAULT_ENV, FaultAdapter

REAPER = 3.0


@pytest.fixture(scope="module")
def reaping_server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(FAULT_ENV, reaper=REAPER)


@pytest.mark.slow
def test_idle_rollout_keeps_its_session(reaping_server) -> None:
    kept = FaultAdapter(base_url=reaping_server.url, keepalive=1.0, prefetch=False)
    control = FaultAdapter(base_url=reaping_server.url, prefetch=False)  # SDK default: 10 s
    kept.reset(task_index=0)
    control.reset(task_index=1)
    assert kept.ok(text="before") == "ok before"
    time.sleep(2 * REAPER + 1)  # the model "thinks" for twice the stale threshold
    assert kept.ok(text="after") == "ok after"
    assert kept.rewards == [1.0, 1.0]
    late = failed(control.ok, text="after")
    assert str(late).startswith("tool 'ok' failed in the environment") and "404" in str(late), late
    assert control.rewards == [None]
    kept.close()
    control.close()
    runtime_hooks.forget_learned_state()
    runtime_hooks.drain()
    assert reaping_server.wait_sessions(0) == 0


def test_keepalive_must_be_positive() -> None:
    with pytest.raises(ValueError, match="keepalive"):
        FaultAdapter(base_url="http://127.0.0.1:9", keepalive=0)
    with pytest.raises(ValueError, match="group_size"):
        FaultAdapter(base_url="http://127.0.0.1:9", group_size=0)

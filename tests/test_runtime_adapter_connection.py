"""The adapter and its connection: construction does no I/O, a failed ``reset`` raises
``SessionOpenError`` naming the task and server, a tool call after the server died comes
back as a raised ``ToolEnvironmentError`` with a ``None`` reward, secrets reach the environment, and
``OPENREWARD_SESSION_URL`` and ``base_url`` override the URL recorded at generation."""

from __future__ import annotations

import pickle
import socket

import pytest

import ors_server
from conftest import ECHO_ENV, failed
from generated.echo import EchoEnv, outcome_reward
from orsgen.runtime.adapter import SessionOpenError

pytestmark = pytest.mark.timeout(120)


def test_construction_does_no_network_io() -> None:
    # A listening socket that never accepts: any connection attempt would queue here.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        sock.setblocking(False)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        envs = [EchoEnv(base_url=url), EchoEnv(base_url=url, secrets={"TOKEN": "x"})]
        pickle.loads(pickle.dumps(EchoEnv))
        assert [e.rewards for e in envs] == [[], []]
        with pytest.raises(BlockingIOError):
            sock.accept()  # nobody connected
    # A closed port: still nothing to raise at construction.
    EchoEnv(base_url=f"http://127.0.0.1:{ors_server.free_port()}")


def test_reset_against_a_dead_server_raises_session_open_error() -> None:
    port = ors_server.free_port()
    env = EchoEnv(base_url=f"http://127.0.0.1:{port}", api_key="orsgen-fake-key-d41d8c")
    with pytest.raises(SessionOpenError) as info:
        env.reset(task_index=3)
    message = str(info.value)
    assert "task 3" in message
    assert f"127.0.0.1:{port}" in message
    assert "orsgen-fake-key-d41d8c" not in message
    # The adapter is still usable afterwards: a call raises a counted failure.
    assert str(failed(env.echo, text="x")).startswith("tool 'echo' failed in the environment")
    assert env.rewards == [None]


@pytest.mark.slow
def test_a_call_after_the_server_died_is_an_error_text(ors_servers: ors_server.Servers) -> None:
    server = ors_servers.own(ECHO_ENV)  # the test stops it
    try:
        # A short call timeout keeps the test quick; the SDK would otherwise retry for ~15 s.
        env = EchoEnv(base_url=server.url, timeout=5.0)
        assert "banana" in env.reset(task_index=1)
        assert env.echo(text="apple") == "echo: apple"  # a real call first: reward 0.0
    finally:
        server.stop()
    out = str(failed(env.echo, text="banana"))
    assert out.startswith("tool 'echo' failed in the environment"), out
    assert env.rewards == [0.0, None]
    assert env.reward == 0.0 and not env.finished
    assert env.last_output == f"Error: {out}"
    assert outcome_reward([env]) == [0.0]
    env.close()  # best effort; must not raise


def test_unlisted_secret_names_reach_the_environment(echo_server) -> None:
    echo_server.reset_counts()
    env = EchoEnv(base_url=echo_server.url, secrets={"MY_TOKEN": "orsgen-fake-7e2a"})
    try:
        assert "apple" in env.reset(task_index=0)
    finally:
        env.close()
    assert echo_server.secret_names().get("MY_TOKEN", 0) >= 1


def test_openreward_session_url_overrides_the_recorded_url(rules_pkg, rules_server, monkeypatch):
    """A package generated from a URL records it as the default; the standard variable
    (and an explicit ``base_url`` above both) must still be able to point elsewhere."""
    assert rules_pkg.RulesEnv.DEFAULT_URL == rules_server.url
    env = rules_pkg.RulesEnv()  # the recorded URL
    try:
        assert "alpha" in env.reset(task_index=0)
    finally:
        env.close()
    dead = f"http://127.0.0.1:{ors_server.free_port()}"
    monkeypatch.setenv("OPENREWARD_SESSION_URL", dead)
    with pytest.raises(SessionOpenError, match=dead.split("//")[1]):
        rules_pkg.RulesEnv(open_timeout=2.0).reset(task_index=0)
    with pytest.raises(Exception, match=dead.split("//")[1]):
        rules_pkg.load_tasks(num_tasks=1)
    env = rules_pkg.RulesEnv(base_url=rules_server.url)  # explicit beats the variable
    try:
        assert "alpha" in env.reset(task_index=0)
    finally:
        env.close()

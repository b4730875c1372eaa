"""The adapter on the wire (orsgen/runtime/adapter.py): a tool call is one request, addressed to the environment by name
(no 308 redirect); reset and close cost exactly the SDK's session requests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import failed

from generated.echo import EchoEnv
from orsgen.runtime.sessions import drift

pytestmark = pytest.mark.usefixtures("fresh_runtime")


def _no_redirects(requests: dict[str, int]) -> None:
    # Every environment-scoped path carries the env name; root paths are the SDK's session routes.
    root_ok = {
        "POST /create_session",
        "POST /create",
        "POST /ping",
        "POST /delete",
        "POST /delete_session",
    }
    for key in requests:
        assert key in root_ok or key.split(" ", 1)[1].startswith("/echoenv/"), key


def test_tool_call_is_one_request_without_redirect(echo_server) -> None:
    env = EchoEnv(base_url=echo_server.url, prefetch=False)
    env.reset(task_index=0)
    echo_server.reset_counts()
    for word in ("pear", "plum", "apple"):
        env.echo(text=word)
    # The episode finished: the server refuses the call, the model's mistake (one request).
    assert failed(env.hint, level=2).reason == "episode_finished"
    req = echo_server.requests()
    req.pop("POST /ping", None)  # the SDK's keepalive, on its own clock
    assert req == {"POST /echoenv/call": 4}, req
    assert env.rewards == [0.0, 0.0, 1.0, None]
    env.close()


def test_reset_and_close_request_counts(echo_server) -> None:
    # The guard's one request per server is tested on its own.
    drift.claim_check(EchoEnv, echo_server.url, ("train", 0))  # the server, and probed task 0
    env = EchoEnv(base_url=echo_server.url, prefetch=False)
    echo_server.reset_counts()
    assert "apple" in env.reset(task_index=0)
    req = echo_server.requests()
    req.pop("POST /ping", None)
    assert req == {"POST /create_session": 1, "POST /create": 1, "GET /echoenv/prompt": 1}, req
    _no_redirects(req)
    echo_server.reset_counts()
    env.close()
    req = echo_server.requests()
    assert req == {"POST /delete": 1, "POST /delete_session": 1}, req


def test_task_spec_reset_and_keywords_from_rows(echo_server) -> None:
    env = EchoEnv(base_url=echo_server.url, prefetch=False)
    prompt = env.reset(task_spec={"target": "quince"}, difficulty="hard", prompt=[])
    assert "quince" in prompt
    assert env.echo(text="quince") == "echo: quince" and env.reward == 1.0
    env.close()
    assert echo_server.wait_sessions(0) == 0

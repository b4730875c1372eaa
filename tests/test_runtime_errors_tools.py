"""Failed tool calls raise, so TRL counts them, and say whose fault they were.

TRL 1.16 counts a tool failure only when the tool raises: GRPOTrainer's tool loop wraps
each call in ``except Exception as e`` and gives the model ``{"error": str(e)}``
(``trl/trainer/grpo_trainer.py``, around line 1981, then ``str(result)`` around 2018);
AsyncGRPO's ``_execute_tool_calls`` does the same and counts ``tools/<name>/failure_total``
(``experimental/async_grpo/async_rollout_worker.py``, around lines 985-994). The model's
mistakes (:class:`ToolInputError`) and the environment's failures
(:class:`ToolEnvironmentError`) differ in type, ``reason`` and text.
"""

from __future__ import annotations

import pytest

import ors_server
from conftest import failed
from envs.trust_support import TRUST_ENV, TrustAdapter
from orsgen.runtime.errors import (
    CallTimeout,
    OrsRuntimeError,
    ToolCallFailure,
    ToolEnvironmentError,
    ToolInputError,
    tool_failure,
)

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("fresh_runtime")]


@pytest.fixture(scope="module")
def server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(TRUST_ENV)


def _what_trl_shows(exc: Exception) -> str:
    """The tool message content both trainers build from a raised tool call."""
    return str({"error": str(exc)})


@pytest.mark.parametrize(
    ("reason", "kind", "ours"),
    [
        ("input_validation", ToolInputError, "invalid_arguments"),
        ("bad_input_shape", ToolInputError, "invalid_arguments"),
        ("not_found", ToolInputError, "unknown_tool"),
        ("episode_finished", ToolInputError, "episode_finished"),
        ("name_collision", ToolEnvironmentError, "server_error"),
    ],
)
def test_sdk_tool_call_errors_are_classified(reason, kind, ours) -> None:  # type: ignore[no-untyped-def]
    from openreward.api.errors import ToolCallError  # type: ignore[import-untyped]

    failure = tool_failure("echo", ToolCallError(reason=reason, detail="the detail"))
    assert type(failure) is kind and failure.reason == ours
    assert failure.environment_failed is (kind is ToolEnvironmentError)
    assert "the detail" in str(failure) and "'echo'" in str(failure)


def test_transport_failures_are_the_environments() -> None:
    from openreward.api.errors import ToolFailed  # type: ignore[import-untyped]

    raised = tool_failure("echo", ToolFailed("boom"))
    assert isinstance(raised, ToolEnvironmentError) and raised.reason == "tool_raised"
    assert tool_failure("echo", CallTimeout()).reason == "timeout"
    assert tool_failure("echo", ConnectionResetError("reset by peer")).reason == "server_error"
    assert isinstance(raised, OrsRuntimeError) and isinstance(raised, ToolCallFailure)


def test_the_models_mistakes_on_a_real_server(server) -> None:  # type: ignore[no-untyped-def]
    env = TrustAdapter(base_url=server.url, prefetch=False)
    try:
        env.reset(task_index=0)
        invalid = failed(env._call, "echo", {"text": 5})
        unknown = failed(env._call, "no_such_tool", {})
        assert env.echo(text="apple") == "echo: apple"  # the session still works
        finished = failed(env.echo, text="apple")  # after the episode finished
    finally:
        env.close()
    assert isinstance(invalid, ToolInputError) and invalid.reason == "invalid_arguments"
    assert isinstance(unknown, ToolInputError) and unknown.reason == "unknown_tool"
    assert isinstance(finished, ToolInputError), finished
    shown = _what_trl_shows(invalid)
    assert (
        shown.startswith("{'error': \"tool 'echo' rejected the call: ") and "valid string" in shown
    )
    assert env.rewards == [None, None, 1.0, None]


def test_environment_failures_on_a_real_server(server) -> None:  # type: ignore[no-untyped-def]
    crash, broken = (TrustAdapter(base_url=server.url, prefetch=False) for _ in range(2))
    try:
        crash.reset(task_index=1)
        broken.reset(task_index=4)
        grader = failed(crash.echo, text="banana")
        backend = failed(broken.echo, text="elder")
    finally:
        crash.close()
        broken.close()
    for failure in (grader, backend):
        assert isinstance(failure, ToolEnvironmentError) and failure.reason == "tool_raised"
    assert "grader crashed while scoring 'banana'" in str(grader)
    assert "the echo backend is unavailable" in str(backend)
    shown = _what_trl_shows(grader)
    assert shown.startswith("{'error': \"tool 'echo' failed in the environment (tool_raised): ")
    # The rollout state records None, and keeps the "Error: ..." text.
    assert crash.rewards == [None] and crash.last_output == f"Error: {grader}"

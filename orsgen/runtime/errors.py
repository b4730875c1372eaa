"""The errors the runtime raises (who raises which: docs/scale.md, "Errors"), and
:func:`describe`, the one-line description of a failure's cause.
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import Literal, get_args

MAX_ERROR_TEXT = 500


class OrsRuntimeError(RuntimeError):
    """Base of every error the orsgen runtime raises at the user."""


class ServerNotConfiguredError(OrsRuntimeError, ValueError):
    """No server URL: the package records none (it was generated from a local file) and
    neither ``base_url=`` nor ``OPENREWARD_SESSION_URL`` gives one."""


class SessionOpenError(OrsRuntimeError):
    """``reset()`` could not open a session; TRL cannot run a rollout without a prompt."""


class EnvironmentUnavailableError(SessionOpenError):
    """With ``strict=True``: the server did not answer within the reconnect window."""


class TaskLoadError(OrsRuntimeError):
    """``load_tasks()`` could not fetch the task list."""


# Why a call failed. The model's own mistakes first, then the environment's failures.
# time_limit: rollout_timeout passed; like the tool-call limit, the rollout is unfinished.
ModelReason = Literal["invalid_arguments", "unknown_tool", "episode_finished", "time_limit"]
EnvReason = Literal[
    "tool_raised", "server_error", "timeout", "lost_session", "unavailable", "no_session"
]
MODEL_REASONS: frozenset[str] = frozenset(get_args(ModelReason))
# The SDK's ToolCallError reasons (openreward/api/environments/client.py _VALID_REASONS)
# that mean the call itself was wrong; any other reason is the environment's.
_SDK_MODEL_REASONS: dict[str, ModelReason] = {
    "input_validation": "invalid_arguments",
    "bad_input_shape": "invalid_arguments",
    "not_found": "unknown_tool",
    "episode_finished": "episode_finished",
}


# The error of a call ``orsgen serve`` has no recorded result for starts with
# OFF_RECORDING_TEXT: the SDK's wire has no reason for it.
OFF_RECORDING = "off_recording"
OFF_RECORDING_TEXT = "not in the recording: "

_SESSION_ID = re.compile(r"\(environment session sid=[^)]*\)\s*")


class ToolCallFailure(OrsRuntimeError):
    """A tool call failed. ``str(exc)`` is what the model reads (TRL gives it
    ``{"error": str(exc)}``); ``tool`` is the wire name and ``reason`` says why."""

    reason: str
    _TEXT = "tool {tool!r} failed: {detail}"

    def __init__(self, tool: str, reason: str, detail: str) -> None:
        self.tool = tool
        self.reason = reason
        self.detail = detail
        super().__init__(self._TEXT.format(tool=tool, reason=reason, detail=detail))

    @property
    def environment_failed(self) -> bool:
        """Whether the environment failed (``True``) rather than the model's call."""
        return self.reason not in MODEL_REASONS and self.reason != OFF_RECORDING


class ToolInputError(ToolCallFailure):
    """The model's own mistake: fix the call and try again."""

    _TEXT = "tool {tool!r} rejected the call: {detail}"

    def __init__(self, tool: str, reason: ModelReason, detail: str) -> None:
        super().__init__(tool, reason, detail)


class ToolOffRecordingError(ToolCallFailure):
    """``orsgen serve`` of a recording has no recorded result for the call (reason
    ``off_recording``): neither the model's mistake nor the environment's failure."""

    _TEXT = "tool {tool!r} has no recorded result: {detail}"

    def __init__(self, tool: str, detail: str) -> None:
        super().__init__(tool, OFF_RECORDING, detail)


class ToolEnvironmentError(ToolCallFailure):
    """The environment failed; nothing in the call was wrong. The rollout stays unscored."""

    _TEXT = "tool {tool!r} failed in the environment ({reason}): {detail}"

    def __init__(self, tool: str, reason: EnvReason, detail: str) -> None:
        super().__init__(tool, reason, detail)


def tool_failure(tool: str, exc: BaseException) -> ToolCallFailure:
    """The failure to raise for an exception a tool call ended with: the SDK's
    ``ToolCallError`` reasons for a bad call are the model's, everything else the environment's."""
    if isinstance(exc, ToolCallFailure):
        return exc
    if isinstance(exc, CallTimeout):
        return ToolEnvironmentError(tool, "timeout", describe(exc))
    if type(exc).__name__ == "ToolCallError":
        model_reason = _SDK_MODEL_REASONS.get(str(getattr(exc, "reason", "")))
        detail = str(getattr(exc, "detail", "") or exc).strip() or "rejected"
        if detail.startswith(OFF_RECORDING_TEXT):
            return ToolOffRecordingError(tool, detail)
        if model_reason is not None:
            return ToolInputError(tool, model_reason, detail)
        return ToolEnvironmentError(tool, "server_error", detail)
    text = str(exc)
    # json.dumps' own errors for arguments it cannot encode (an object, a NaN), raised here
    # before the call left: the arguments are the fault.
    if (isinstance(exc, TypeError) and "is not JSON serializable" in text) or (
        isinstance(exc, ValueError) and "not JSON compliant" in text
    ):
        detail = _SESSION_ID.sub("", text).strip()
        return ToolInputError(
            tool, "invalid_arguments", f"the arguments could not be serialised to JSON ({detail})"
        )
    if type(exc).__name__ == "ToolFailed":
        # The SDK prefixes the server's message with the session id: noise for the model.
        return ToolEnvironmentError(tool, "tool_raised", _SESSION_ID.sub("", describe(exc)))
    return ToolEnvironmentError(tool, "server_error", describe(exc))


class CallTimeout(TimeoutError):
    """A call on the runtime loop got no answer within its time budget (and was cancelled)."""


def _connect_text(exc: BaseException) -> str:
    """aiohttp's connector errors mention ``ssl:default`` even for plain http; say what happened."""
    host = getattr(exc, "host", None)
    port = getattr(exc, "port", None)
    where = f"{host}:{port}" if host is not None else "the server"
    os_error = getattr(exc, "os_error", None)
    errno = getattr(os_error, "errno", None)
    reason = (os.strerror(errno) if isinstance(errno, int) else None) or type(
        os_error or exc
    ).__name__
    if type(exc).__name__ == "ClientConnectorDNSError":
        return f"cannot resolve host {host!r} ({reason})"
    return f"cannot connect to {where}: {str(reason).lower()} (is the server running?)"


def describe(exc: BaseException) -> str:
    """One line, secret-free, that says what went wrong (the root cause where the SDK wraps it)."""
    name = type(exc).__name__
    status = getattr(exc, "status", None)
    if isinstance(status, int) and name.endswith("ResponseError"):
        message = getattr(exc, "message", "") or ""
        text = f"HTTP {status}: {message}".strip().rstrip(":")
    elif name == "MaxRetriesError" and getattr(exc, "errors", None):
        text = f"gave up after {len(exc.errors)} attempts; last: {describe(exc.errors[-1])}"  # type: ignore[attr-defined]
    elif name == "SessionTerminatedError":
        text = f"the session ended on the server ({str(exc).strip() or 'terminated'})"
    elif name == "ToolFailed":
        text = f"the tool raised on the server: {str(exc).strip()}"
    elif name in ("ClientConnectorError", "ClientConnectorDNSError"):
        text = _connect_text(exc)
    elif name in ("ClientOSError", "ServerDisconnectedError"):
        text = f"{name}: {str(exc).strip() or 'connection lost'} (is the server running?)"
    elif isinstance(exc, (asyncio.TimeoutError, TimeoutError)) and not str(exc).strip():
        text = "timed out"
    else:
        text = str(exc).strip() or name
        if name not in text and not isinstance(exc, (TimeoutError, RuntimeError)):
            text = f"{name}: {text}"
    text = " ".join(text.split())
    return text if len(text) <= MAX_ERROR_TEXT else text[: MAX_ERROR_TEXT - 3] + "..."

"""The errors the runtime raises, and the one-line description of a failure's cause.

Every error a generated package raises at the user derives from :class:`OrsRuntimeError`
and names the server, the environment and the cause; the SDK's or aiohttp's exception
stays reachable as ``__cause__``. Tool calls never raise: they return ``"Error: ..."``
text built with :func:`describe`.

::

    OrsRuntimeError (RuntimeError)
    ├── ServerNotConfiguredError (also ValueError): no server to connect to
    ├── SessionOpenError: reset() could not open a session
    │   └── EnvironmentUnavailableError: strict=True, the server stayed away past reconnect_for
    ├── TaskLoadError: load_tasks() could not fetch the task list
    └── ToolDriftError (orsgen.runtime.drift): strict=True, the live tools differ

    CallTimeout (TimeoutError): a call on the runtime loop got no answer in time; the
    adapter turns it into ``"Error: ... got no answer within ..."`` text
"""

from __future__ import annotations

import asyncio
import os

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

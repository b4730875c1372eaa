"""Snapshot requests that say when they are waiting: the SDK retries silently, so
``orsgen`` would look hung. :func:`ask` uses the SDK's own retry wrapper with a hook that
reports each retry. Lines name the cause only (a status code or the kind of connection
failure), never a header or the server's text, so no secret can reach them.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import aiohttp

from orsgen.runtime.transport import sdk
from orsgen.runtime.transport.endpoint import Endpoint

Progress = Callable[[str], None]


def _cause(exc: BaseException | None) -> str:
    if isinstance(exc, aiohttp.ClientResponseError):
        if getattr(exc, "backend_starting", False):
            return "the environment is still starting"
        return f"the server answered HTTP {exc.status}"
    if isinstance(exc, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
        return "server not answering yet: timed out"
    if isinstance(exc, aiohttp.ClientConnectorError):
        if isinstance(exc.os_error, ConnectionRefusedError):
            return "server not answering yet: connection refused"
        if isinstance(exc.os_error, socket.gaierror):
            return "server not answering yet: host name not found"
        return f"server not answering yet: {type(exc.os_error).__name__}"
    return f"server not answering yet: {type(exc).__name__}"


async def ask(
    endpoint: Endpoint,
    env: Any,
    method: str,
    path: str,
    payload: dict[str, Any] | None = None,
    *,
    progress: Progress,
) -> Any:
    """:func:`orsgen.runtime.transport.sdk.stateless`, reporting every retry to ``progress``."""

    def report(state: Any, attempts: int | None) -> None:
        outcome = state.outcome
        exc = outcome.exception() if outcome is not None and outcome.failed else None
        starting = getattr(exc, "backend_starting", False)
        of = f"/{attempts}" if attempts is not None and not starting else ""
        wait = getattr(state.next_action, "sleep", None)
        after = f"; retrying in {wait:.0f} s" if wait is not None else "; retrying"
        progress(f"{_cause(exc)} (attempt {state.attempt_number}{of}){after}")

    return await sdk.stateless(endpoint, env, method, path, payload, before_retry=report)

"""Keepalive pings of an open session, on the runtime loop, in place of the SDK's pinger.

The SDK's pinger logs every failed ping and keeps pinging a session the server has
forgotten (after a restart it answers 404 "Active environment not found") for minutes.
This one is quiet while the server is away (:mod:`orsgen.runtime.outage` logs that
once), and on the server's "not found" marks the session lost, logs one line and stops.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from orsgen.runtime import outage
from orsgen.runtime.errors import describe
from orsgen.runtime.process import current

log = logging.getLogger("orsgen.runtime")

PING_TIMEOUT = 30.0


def _label(session: Any) -> str:
    env = getattr(session, "env", None)
    name = getattr(env, "variant", None) or getattr(env, "name", None) or "environment"
    return f"{name} at {session.base_url}"


def mark_lost(session: Any, exc: BaseException) -> None:
    """The server no longer knows this session: log once, stop its pings, and make
    later calls on it fail at once. Safe from any thread."""
    if getattr(session, "lost", False):
        return
    session.lost = True
    log.warning(
        "orsgen: session %s on %s was lost (%s: the server restarted, or reaped it); "
        "its rollout ends unscored",
        session.sid,
        _label(session),
        describe(exc),
    )

    def _dead() -> None:
        from openreward.api._session.ping import (  # type: ignore[import-untyped]  # pyright: ignore[reportMissingTypeStubs]
            ErrorResponse,
        )

        session._mark_dead(ErrorResponse(type="error", message="the server lost this session"))

    runtime = current()
    if runtime.in_loop_thread():
        _dead()
    else:
        runtime.loop.call_soon(_dead)


async def _ping(session: Any) -> None:
    """One ``/ping`` of ``session``, given up after ``PING_TIMEOUT`` seconds."""
    from openreward.api._session.http import (  # type: ignore[import-untyped]  # pyright: ignore[reportMissingTypeStubs]
        request_retryable,
    )

    await asyncio.wait_for(
        request_retryable(
            session.client,
            "POST",
            "/ping",
            expect_json=False,
            token=session.api_key,
            sid=session.sid,
            deployment=session.deployment,
        ),
        PING_TIMEOUT,
    )


async def ping_loop(session: Any, interval: float) -> None:
    """Ping every ``interval`` seconds until the session dies, is lost, or is closed."""
    record = outage.server(session.base_url)
    warned = False
    while True:
        try:
            await asyncio.wait_for(session._dead.wait(), interval)
            return  # the session died (or was lost): nothing left to keep alive
        except asyncio.TimeoutError:
            pass
        try:
            await _ping(session)
            record.answered()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a ping failure never ends the loop by itself
            if outage.is_lost(exc):
                mark_lost(session, exc)
                return
            if outage.unreachable(exc):
                record.away(exc)
            elif not warned:
                warned = True
                log.warning(
                    "orsgen: keepalive ping of session %s failed: %s", session.sid, describe(exc)
                )

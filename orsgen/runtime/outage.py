"""Riding out an environment server that goes away for a while.

One :class:`Server` per URL and process (kept by the process's
:class:`~orsgen.runtime.process.Runtime`) remembers whether this process ever reached the
server and since when it has not answered. It logs one line when the server goes away,
one when the first rollout degrades, and one when the server answers again (how long it
was gone, how many rollouts ran degraded). Retries never log.

The rules the adapter applies with it (see ``docs/runtime.md``):

- a server this process never reached fails at once (a wrong URL or key shows up now);
- otherwise ``reset()`` and tool calls wait for the server, probing ``GET /health`` with
  jittered exponential backoff, until ``reconnect_for`` seconds after it went away;
- a tool call is sent again only when the failed attempt never reached the server
  (the connection was refused or the host did not resolve): ``/call`` is not idempotent.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from typing import Any, cast

from orsgen.runtime.errors import describe
from orsgen.runtime.process import current

log = logging.getLogger("orsgen.runtime")

DEFAULT_RECONNECT_FOR = 300.0
# Backoff between health probes while a server is away: jittered, doubling, capped.
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 10.0
PROBE_TIMEOUT = 5.0
# Statuses a gateway answers for a server that is not there (the server never saw the request).
_AWAY_STATUSES = frozenset({502, 503, 504})
LOST_SESSION_TEXT = "Active environment not found"


class Server:
    """What this process knows about one server URL."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.reached = False
        self.down_since: float | None = None
        self.degraded = 0  # rollouts degraded in the current stretch
        self._lock = threading.Lock()

    def answered(self) -> None:
        """The server answered something: it is (back) up."""
        if self.reached and self.down_since is None:  # the hot path: nothing changed
            return
        with self._lock:
            self.reached = True
            if self.down_since is None:
                return
            gone, degraded = time.monotonic() - self.down_since, self.degraded
            self.down_since, self.degraded = None, 0
        more = f"; {degraded} rollout(s) ran degraded meanwhile" if degraded else ""
        log.warning(
            "orsgen: the ORS server at %s answers again after %.1f s%s", self.url, gone, more
        )

    def away(self, exc: BaseException) -> float:
        """The server did not answer; returns when it went away (logged the first time)."""
        with self._lock:
            first = self.down_since is None
            if first:
                self.down_since = time.monotonic()
            since = self.down_since
        if first:
            log.warning(
                "orsgen: the ORS server at %s stopped answering (%s); waiting for it",
                self.url,
                describe(exc),
            )
        assert since is not None
        return since

    def degrade(self, window: float) -> None:
        """Count a degraded rollout; the first of a stretch is logged."""
        with self._lock:
            self.degraded += 1
            first = self.degraded == 1
        if first:
            log.warning(
                "orsgen: the ORS server at %s has not answered within reconnect_for=%g s; "
                "rollouts run degraded (environment unavailable, reward None) until it answers",
                self.url,
                window,
            )

    @property
    def down(self) -> bool:
        return self.down_since is not None


def server(url: str) -> Server:
    """The process's record of ``url`` (fresh after a fork)."""
    return current().servers.get(url, lambda: Server(url))


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception, its causes, and the last attempt of an SDK ``MaxRetriesError``."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        cur = todo.pop()
        if cur is None or any(cur is s for s in seen):
            continue
        seen.append(cur)
        errors: object = getattr(cur, "errors", None)  # an ExceptionGroup-like list
        todo += [cur.__cause__, cur.__context__]
        if isinstance(errors, list) and errors:
            last: object = cast(list[object], errors)[-1]
            if isinstance(last, BaseException):
                todo.append(last)
    return seen


def never_sent(exc: BaseException) -> bool:
    """Whether the failed request cannot have reached the server (connection refused, DNS)."""
    import aiohttp

    return any(isinstance(e, aiohttp.ClientConnectorError) for e in _chain(exc))


def unreachable(exc: BaseException) -> bool:
    """Whether the failure means the server is not there (rather than that it answered an error)."""
    import aiohttp

    for e in _chain(exc):
        if isinstance(e, aiohttp.ClientResponseError):
            return e.status in _AWAY_STATUSES
        if isinstance(e, (aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError)):
            return True
        if isinstance(e, aiohttp.ClientOSError):
            return True
    return False


def is_lost(exc: BaseException) -> bool:
    """Whether the server answered that it no longer knows the session (it restarted)."""
    import aiohttp

    for e in _chain(exc):
        if isinstance(e, aiohttp.ClientResponseError):
            return e.status == 410 or (e.status == 404 and LOST_SESSION_TEXT in str(e.message))
    return False


async def probe(url: str) -> bool:
    """One ``GET /health``: does anything answer at ``url`` (other than a gateway's 5xx)?"""
    from orsgen.runtime.connection import client_for

    try:
        client = client_for(url)
        async with client.get(
            "/health", timeout=_timeout(PROBE_TIMEOUT), allow_redirects=False
        ) as response:
            return response.status not in _AWAY_STATUSES
    except Exception:  # noqa: BLE001 - anything but an answer means "not yet"
        return False


def _timeout(seconds: float) -> Any:
    import aiohttp

    return aiohttp.ClientTimeout(total=seconds)


async def wait_until_back(record: Server, deadline: float) -> bool:
    """Probe with jittered exponential backoff until the server answers (``True``) or
    ``deadline`` (``time.monotonic()``) passes (``False``)."""
    delay = BACKOFF_FIRST
    while True:
        if await probe(record.url):
            record.answered()
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        await asyncio.sleep(min(left, random.uniform(delay / 2, delay)))
        delay = min(delay * 2, BACKOFF_MAX)

"""Per-server health and the error classifiers the call policy reads. A server's health logs
one line when it goes away, one when the first rollout of a stretch degrades, and one when it
answers again (how long it was gone, how many rollouts degraded). Retries never log.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING, cast

from orsgen.runtime.errors import describe
from orsgen.runtime.transport import http
from orsgen.runtime.transport.process import Records, current
from orsgen.runtime.transport.replicas import AWAY_STATUSES, Clock, Replica

if TYPE_CHECKING:  # aiohttp loads with the first client, not with a generated package
    import aiohttp

log = logging.getLogger("orsgen.runtime")

DEFAULT_RECONNECT_FOR = 300.0
# Backoff between health probes while a server is away: jittered, doubling, capped.
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 10.0
PROBE_TIMEOUT = 5.0
# Beyond the window itself, how long a blocked caller waits for the prober to report.
WAIT_SLACK = PROBE_TIMEOUT + 5.0
LOST_SESSION_TEXT = "Active environment not found"
# How a platform says it is full when it does not answer 429 (in a 400/403/409/503's message).
_CAPACITY_TEXTS = ("too many sessions", "concurrency", "max pods", "capacity")
# How often a server known to be down is probed in the background, to rejoin ``base_url=[...]``.
REJOIN_EVERY = 5.0


class ServerHealth(Replica):
    """What this process knows about one server URL, a replica of its environment."""

    def __init__(self, url: str, clock: Clock = time.monotonic) -> None:
        super().__init__(url)
        self.reached = False
        self._clock = clock
        self._lock = threading.Lock()
        self._degraded: Counter[type] = Counter()  # per adapter class, all time
        self._stretch_from = 0  # the total when this stretch began
        # A stretch of refusals: since when, the opens waiting in it, refusals in it.
        self.refusing_since: float | None = None
        self._refused_opens = 0
        self._stretch_refusals = 0

    @property
    def degraded(self) -> int:
        """Rollouts degraded in the current stretch (since the server last answered)."""
        with self._lock:
            return self._degraded.total() - self._stretch_from

    def degraded_of(self, cls: type) -> int:
        """Rollouts of ``cls`` and its subclasses degraded here, all time."""
        with self._lock:
            return sum(n for klass, n in self._degraded.items() if issubclass(klass, cls))

    def answered(self) -> None:
        """The server answered something: it is (back) up."""
        if self.reached and self.down_since is None:  # the hot path: nothing changed
            return
        with self._lock:
            self.reached = True
            if self.down_since is None:
                return
            total = self._degraded.total()
            gone, degraded = self.came_back(self._clock()) or 0.0, total - self._stretch_from
            self._stretch_from = total
        more = f"; {degraded} rollout(s) ran degraded meanwhile" if degraded else ""
        log.warning(
            "orsgen: the ORS server at %s answers again after %.1f s%s", self.url, gone, more
        )

    def away(self, exc: BaseException) -> None:
        with self._lock:
            first = self.went_away(self._clock(), (REJOIN_EVERY, REJOIN_EVERY))
        if first:
            log.warning(
                "orsgen: the ORS server at %s stopped answering (%s); waiting for it",
                self.url,
                describe(exc),
            )

    def degrade(self, owner: type, window: float) -> None:
        """Count one degraded rollout of ``owner``; the first of a stretch is logged."""
        with self._lock:
            self._degraded[owner] += 1
            first = self._degraded.total() - self._stretch_from == 1
        if first:
            log.warning(
                "orsgen: the ORS server at %s has not answered within reconnect_for=%g s; "
                "rollouts run degraded (environment unavailable, reward None) until it answers",
                self.url,
                window,
            )

    def refused(self, exc: BaseException, first: bool) -> None:
        """A session creation was refused for capacity (``first``: this open's first)."""
        self.answered()  # a refusal is an answer
        with self._lock:
            self._stretch_refusals += 1
            self._refused_opens += 1 if first else 0
            starts = self.refusing_since is None
            if starts:
                self.refusing_since = self._clock()
        if starts:
            log.warning(
                "orsgen: the ORS server at %s refuses new sessions (%s); resets wait for a "
                "place (Retry-After honoured) within reconnect_for",
                self.url,
                describe(exc),
            )

    def done_waiting(self, accepted: bool) -> None:
        """An open that was refused is over (``accepted``: it got its session); the stretch
        ends when no open waits any more."""
        with self._lock:
            self._refused_opens = max(0, self._refused_opens - 1)
            if self._refused_opens or self.refusing_since is None:
                return
            took, refusals = self._clock() - self.refusing_since, self._stretch_refusals
            self.refusing_since, self._stretch_refusals = None, 0
        if accepted:
            log.warning(
                "orsgen: the ORS server at %s accepts new sessions again after %.1f s "
                "(%d refusal(s) meanwhile)",
                self.url,
                took,
                refusals,
            )

    def probe_later(self) -> None:
        """Probe a server known to be down in the background, every ``REJOIN_EVERY`` s."""
        with self._lock:
            if not self.due(self._clock()):
                return
        current().submit(self._rejoin())

    async def _rejoin(self) -> None:
        if await probe(self.url):
            self.answered()


class Health(Records[str, ServerHealth]):
    """The process's health records by server URL (a :meth:`Process.part`)."""


def record(url: str) -> ServerHealth:
    """The process's record of ``url`` (fresh after a fork)."""
    return current().part(Health).get(url, lambda: ServerHealth(url))


def degraded(cls: type) -> int:
    """Rollouts of ``cls`` and its subclasses that ran degraded in this process, on any server."""
    return sum(found.degraded_of(cls) for _, found in current().part(Health).items())


def forget() -> None:
    """Forget every record (for tests: the next failure is a first contact again)."""
    current().part(Health).clear()


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
    """Whether the failure means the server is not there, not that it answered an error."""
    import aiohttp

    for e in _chain(exc):
        if isinstance(e, aiohttp.ClientResponseError):
            return e.status in AWAY_STATUSES
        if isinstance(e, (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError)):
            return True  # ClientConnectorError is a ClientOSError
    return False


def answer(exc: BaseException) -> aiohttp.ClientResponseError | None:
    """The server's HTTP error answer behind a failure, if it answered."""
    import aiohttp

    return next((e for e in _chain(exc) if isinstance(e, aiohttp.ClientResponseError)), None)


def refusal(exc: BaseException) -> float | None:
    """How long the server asks to wait when the failure is a capacity refusal (``0.0``: no
    delay named); ``None`` when it is something else."""
    e = answer(exc)
    if e is None:
        return None
    after = getattr(e, "retry_after", None)  # the SDK's SessionResponseError
    if after is None and e.headers is not None:
        text = e.headers.get("Retry-After", "").strip()
        after = float(text) if text.isdigit() else None
    full = any(t in str(e.message).lower() for t in _CAPACITY_TEXTS)
    if (
        e.status == 429
        or (e.status == 503 and after is not None)
        or (full and e.status in (400, 403, 409, 503))
    ):
        return float(after) if isinstance(after, (int, float)) else 0.0
    return None


def is_lost(exc: BaseException) -> bool:
    """Whether the server answered that it no longer knows the session (it restarted)."""
    e = answer(exc)
    return e is not None and (
        e.status == 410 or (e.status == 404 and LOST_SESSION_TEXT in str(e.message))
    )


async def probe(url: str) -> bool:
    """One ``GET /health``: does anything answer at ``url`` (other than a gateway's 5xx)?"""
    try:
        import aiohttp

        async with http.client(url).get(
            "/health", timeout=aiohttp.ClientTimeout(total=PROBE_TIMEOUT), allow_redirects=False
        ) as response:
            return response.status not in AWAY_STATUSES
    except Exception:  # noqa: BLE001 - anything but an answer means "not yet"
        return False

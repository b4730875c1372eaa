"""Per-server health, the error classifiers, and the one call policy.

One :class:`ServerHealth` per server URL and process remembers whether this process ever
reached the server, since when it has not answered, and the rollouts that ran degraded
(each counted once, here). It logs one line when the server goes away, one when the first
rollout of a stretch degrades, and one when the server answers again (how long it was gone,
how many rollouts ran degraded). Retries never log.

:class:`CallPolicy` decides, for every session open and every tool call, whether to wait,
retry, degrade or fail (see ``docs/runtime.md``):

- a server this process never reached fails at once (a wrong URL or key shows up now);
- otherwise a failure that says the server is not there waits for it, probing
  ``GET /health`` with jittered exponential backoff, until ``reconnect_for`` seconds after
  it went away; past that window the rollout degrades (``strict=True``: a reset fails);
- a tool call is sent again only when the failed attempt never reached the server (the
  connection was refused or the host did not resolve): ``/call`` is not idempotent.

Its clock, sleep, jitter and probe are injectable, so the policy is tested without a
server or real waiting.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, cast

from orsgen.runtime import http
from orsgen.runtime.errors import describe
from orsgen.runtime.process import Records, current

log = logging.getLogger("orsgen.runtime")

DEFAULT_RECONNECT_FOR = 300.0
# Backoff between health probes while a server is away: jittered, doubling, capped.
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 10.0
PROBE_TIMEOUT = 5.0
# Beyond the window itself, how long a blocked caller waits for the prober to report.
WAIT_SLACK = PROBE_TIMEOUT + 5.0
# Statuses a gateway answers for a server that is not there (the server never saw the request).
_AWAY_STATUSES = frozenset({502, 503, 504})
LOST_SESSION_TEXT = "Active environment not found"
# How a platform says it is full when it does not answer 429 (matched in the message of a
# 400/403/409/503 to a session creation).
_CAPACITY_TEXTS = ("too many sessions", "concurrency", "max pods", "capacity")
# How often a server known to be down is probed in the background, so that it rejoins a
# list of several servers (``base_url=[...]``) that no reset is waiting on.
REJOIN_EVERY = 5.0

Clock = Callable[[], float]


class ServerHealth:
    """What this process knows about one server URL: reached or not, away since when,
    refusing new sessions since when (HTTP 429, 503 with ``Retry-After``), and its
    degraded rollouts and refusals."""

    def __init__(self, url: str, clock: Clock = time.monotonic) -> None:
        self.url = url
        self.reached = False
        self.down_since: float | None = None
        self._clock = clock
        self._lock = threading.Lock()
        # Degraded rollouts per adapter class, all time; and the total when this stretch began.
        self._degraded: Counter[type] = Counter()
        self._stretch_from = 0
        # A stretch of refusals: since when, the opens waiting in it, refusals in it.
        self.refusing_since: float | None = None
        self._refused_opens = 0
        self._stretch_refusals = 0
        self.refusals = 0  # capacity refusals seen from this server, all time
        self._probed_at = -REJOIN_EVERY

    @property
    def down(self) -> bool:
        return self.down_since is not None

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
            gone, degraded = self._clock() - self.down_since, total - self._stretch_from
            self.down_since, self._stretch_from = None, total
        more = f"; {degraded} rollout(s) ran degraded meanwhile" if degraded else ""
        log.warning(
            "orsgen: the ORS server at %s answers again after %.1f s%s", self.url, gone, more
        )

    def away(self, exc: BaseException) -> float:
        """The server did not answer; returns when it went away (logged the first time)."""
        with self._lock:
            first = self.down_since is None
            if first:
                self.down_since = self._clock()
            since = self.down_since
        if first:
            log.warning(
                "orsgen: the ORS server at %s stopped answering (%s); waiting for it",
                self.url,
                describe(exc),
            )
        assert since is not None
        return since

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
        """A session creation was refused for capacity (``first``: the first refusal of
        this open). A refusal is an answer. The first of a stretch is logged."""
        self.answered()
        with self._lock:
            self.refusals += 1
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
        """An open that was refused is over (``accepted``: it got its session). When no
        open waits any more, the stretch ends; logged when the server accepted."""
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
        """Probe a server known to be down in the background (at most every
        ``REJOIN_EVERY`` s): when it answers it is up again, and gets new sessions."""
        with self._lock:
            now = self._clock()
            if self.down_since is None or now - self._probed_at < REJOIN_EVERY:
                return
            self._probed_at = now
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
    return sum(found.degraded_of(cls) for found in current().part(Health).values())


def forget() -> None:
    """Forget every record (the next failure is a first contact again)."""
    current().part(Health).clear()


# -- classifiers -------------------------------------------------------------------------


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


def refusal(exc: BaseException) -> float | None:
    """How long the server asks to wait when the failure is a capacity refusal ("not now":
    HTTP 429, a 503 with ``Retry-After``, or a platform's capacity error), ``0.0`` when it
    names no delay; ``None`` when the failure is something else."""
    import aiohttp

    for e in _chain(exc):
        if isinstance(e, aiohttp.ClientResponseError):
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
    return None


def is_lost(exc: BaseException) -> bool:
    """Whether the server answered that it no longer knows the session (it restarted)."""
    import aiohttp

    for e in _chain(exc):
        if isinstance(e, aiohttp.ClientResponseError):
            return e.status == 410 or (e.status == 404 and LOST_SESSION_TEXT in str(e.message))
    return False


async def probe(url: str) -> bool:
    """One ``GET /health``: does anything answer at ``url`` (other than a gateway's 5xx)?"""
    try:
        import aiohttp

        async with http.client(url).get(
            "/health", timeout=aiohttp.ClientTimeout(total=PROBE_TIMEOUT), allow_redirects=False
        ) as response:
            return response.status not in _AWAY_STATUSES
    except Exception:  # noqa: BLE001 - anything but an answer means "not yet"
        return False


# -- the call policy ---------------------------------------------------------------------


class Action(enum.Enum):
    """What the caller does after a failure (or, before an open, a known outage)."""

    GO = "go"  # nothing in the way: open now
    RETRY = "retry"  # the server answers (again): try once more
    FAIL = "fail"  # report this failure as it is
    TIMED_OUT = "timed out"  # a call's own time ran out while the server was away
    LOST = "lost"  # the server no longer knows the session: the episode ends unscored
    DEGRADE = "degrade"  # past the reconnect window: the rollout runs unscored
    UNAVAILABLE = "unavailable"  # past the window with strict=True: a reset raises


def _run_on_loop(coro: Coroutine[Any, Any, bool], timeout: float) -> bool:
    return current().run(coro, timeout=timeout)


class CallPolicy:
    """The one policy for every session open and tool call against one server.

    ``run`` blocks on a coroutine (default: the runtime loop); ``clock``, ``sleep``,
    ``pause`` (a blocking sleep), ``jitter`` and ``probe`` are injectable for tests."""

    def __init__(
        self,
        health: ServerHealth,
        reconnect_for: float,
        *,
        strict: bool = False,
        clock: Clock = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        jitter: Callable[[float, float], float] = random.uniform,
        probe: Callable[[str], Awaitable[bool]] = probe,
        run: Callable[[Coroutine[Any, Any, bool], float], bool] = _run_on_loop,
        pause: Callable[[float], None] = time.sleep,
    ) -> None:
        self.health = health
        self.reconnect_for = reconnect_for
        self.strict = strict
        self._clock, self._sleep, self._jitter = clock, sleep, jitter
        self._probe, self._run, self._pause = probe, run, pause

    def before_open(self) -> Action:
        """A known outage is waited out before opening (skipping the SDK's retries)."""
        known = self.health.down and self.health.reached
        if known and not self._wait_back(None):
            return self._past_window()
        return Action.GO

    def open_failed(self, cause: BaseException | None) -> Action:
        """A session did not open (``cause``: the SDK's or aiohttp's error)."""
        # A server this process never reached fails at once: a wrong URL shows now.
        if cause is None or not unreachable(cause) or not self.health.reached:
            return Action.FAIL
        return Action.RETRY if self._wait_back(cause) else self._past_window()

    def open_refused(self, cause: BaseException, since: float, attempt: int) -> Action:
        """A session creation was refused for capacity (``since``: this open's first
        refusal; ``attempt``: refusals before this one). Waits as the server asks
        (``Retry-After``, never sooner, up to 1.5x later so waiting opens spread out) or with
        jittered exponential backoff, then ``RETRY``; past ``reconnect_for`` from ``since``
        the rollout degrades (``strict``: ``UNAVAILABLE``)."""
        self.health.refused(cause, first=attempt == 0)
        left = since + self.reconnect_for - self._clock()
        if left <= 0:
            return self._past_window()
        after = refusal(cause) or 0.0
        base = after if after > 0 else min(BACKOFF_FIRST * 2**attempt, BACKOFF_MAX)
        self._pause(min(left, self._jitter(base, base * 1.5)))
        return Action.RETRY

    def call_failed(self, exc: BaseException, until: float) -> Action:
        """A tool call failed; ``until`` is when its own ``timeout`` ends."""
        if is_lost(exc):
            self.health.answered()
            return Action.LOST
        if not never_sent(exc):  # it may have run: never sent twice
            if unreachable(exc):
                self.health.away(exc)
            return Action.FAIL
        if self._wait_back(exc, until):
            return Action.RETRY  # it never reached the server: safe to send once it answers
        if self._clock() < self.window_end():
            return Action.TIMED_OUT
        return Action.DEGRADE

    def succeeded(self) -> None:
        self.health.answered()

    def window_end(self) -> float:
        """When waiting for the server stops: ``reconnect_for`` after it went away."""
        return (self.health.down_since or self._clock()) + self.reconnect_for

    def _past_window(self) -> Action:
        return Action.UNAVAILABLE if self.strict else Action.DEGRADE

    def _wait_back(self, cause: BaseException | None, until: float | None = None) -> bool:
        """Wait until the server answers again, or the window since it went away (or
        ``until``) ends."""
        if self.reconnect_for <= 0:
            return False
        if cause is not None:
            self.health.away(cause)
        deadline = self.window_end() if until is None else min(until, self.window_end())
        budget = max(0.0, deadline - self._clock()) + WAIT_SLACK
        try:
            return self._run(self.until_back(deadline), budget)
        except TimeoutError:
            return False

    async def until_back(self, deadline: float) -> bool:
        """Probe with jittered exponential backoff until the server answers (``True``) or
        ``deadline`` (on this policy's clock) passes (``False``)."""
        delay = BACKOFF_FIRST
        while True:
            if await self._probe(self.health.url):
                self.health.answered()
                return True
            left = deadline - self._clock()
            if left <= 0:
                return False
            await self._sleep(min(left, self._jitter(delay / 2, delay)))
            delay = min(delay * 2, BACKOFF_MAX)

"""The one call policy: for every session open and tool call against one server, whether to
wait, retry, degrade or fail, by the rules docs/scale.md states ("Outages"). A tool call is
sent again only when the failed attempt never reached the server: ``/call`` is not idempotent.
"""

from __future__ import annotations

import asyncio
import enum
import random
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from orsgen.runtime.transport.health import (
    BACKOFF_FIRST,
    BACKOFF_MAX,
    WAIT_SLACK,
    ServerHealth,
    is_lost,
    never_sent,
    probe,
    refusal,
    unreachable,
)
from orsgen.runtime.transport.process import current
from orsgen.runtime.transport.replicas import Clock


class Action(enum.Enum):
    """What the caller does after a failure (or, before an open, a known outage)."""

    GO = "go"  # nothing in the way: open now
    RETRY = "retry"  # the server answers (again): try once more
    FAIL = "fail"  # report this failure as it is
    TIMED_OUT = "timed out"  # a call's own time ran out while the server was away
    LOST = "lost"  # the server no longer knows the session: the episode ends unscored
    DEGRADE = "degrade"  # past the reconnect window: the rollout runs unscored
    UNAVAILABLE = "unavailable"  # past the window with strict=True: a reset raises


class CallPolicy:
    """``run`` blocks on a coroutine (default: on the runtime loop); it, ``clock``, ``sleep``,
    ``jitter`` and ``probe`` are injectable for tests."""

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
        run: Callable[[Coroutine[Any, Any, bool], float], bool] = lambda c, t: current().run(c, t),
    ) -> None:
        self.health, self.reconnect_for, self.strict = health, reconnect_for, strict
        self._clock, self._sleep, self._jitter = clock, sleep, jitter
        self._probe, self._run = probe, run

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
        """A session creation was refused for capacity (``since``: this open's first refusal;
        ``attempt``: refusals before this one). Waits as the server asks (``Retry-After``, up to
        1.5x later so waiting opens spread out) or with jittered backoff, then ``RETRY``, until
        ``reconnect_for`` from ``since`` has passed."""
        self.health.refused(cause, first=attempt == 0)
        left = since + self.reconnect_for - self._clock()
        if left <= 0:
            return self._past_window()
        after = refusal(cause) or 0.0
        base = after if after > 0 else min(BACKOFF_FIRST * 2**attempt, BACKOFF_MAX)
        time.sleep(min(left, self._jitter(base, base * 1.5)))
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
        """Wait until the server answers, or its reconnect window (or ``until``) ends."""
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

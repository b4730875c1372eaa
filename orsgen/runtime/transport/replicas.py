"""One replica pool: replicas of one service, each request to the least loaded. It holds an
evaluation's model endpoints (orsgen/eval/endpoints.py) and places sessions on the ORS servers
of one environment (``base_url=[...]``); its rules: docs/evaluating.md ("Several endpoints").
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

# Busy (408, 409, 429) or not there (a gateway's 502, 503, 504): the replica cannot take
# this request now, and another may.
AWAY_STATUSES = frozenset({408, 409, 429, 502, 503, 504})
FIRST_REST = 1.0
MAX_REST = 30.0

Clock = Callable[[], float]


class PoolDown(RuntimeError):
    """Every replica has been down for the down limit (the message names each's last failure)."""


@dataclass(eq=False)
class Replica:
    """One replica (``url``: its public URL): its load, its rest, and its counts."""

    url: str
    in_flight: int = 0
    requests: int = 0
    failures: int = 0  # requests it failed
    outages: int = 0
    down_since: float | None = None
    rest: float = 0.0
    rest_until: float = 0.0
    failed_in_outage: int = 0
    last_error: str = ""
    suspect: Hashable = None  # the task whose request it last failed while up

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def went_away(self, now: float, rests: tuple[float, float], retried: bool = False) -> bool:
        """It is away (``retried``: its try after a rest failed): it rests, the rest doubling
        on each failed try. Whether this starts an outage."""
        first = self.down_since is None
        if first:
            self.down_since, self.rest = now, rests[0]
            self.outages += 1
            self.failed_in_outage = 0
        elif retried:
            self.rest = min(self.rest * 2, rests[1])
        if first or retried:
            self.rest_until = now + self.rest
        return first

    def came_back(self, now: float) -> float | None:
        """It answered: it is up. How long it was down (``None``: it was up)."""
        self.suspect = None
        if self.down_since is None:
            return None
        gone, self.down_since = now - self.down_since, None
        return gone

    def due(self, now: float) -> bool:
        """Whether it is down and its rest is over (the next try is then a rest later)."""
        if self.down_since is None or now < self.rest_until:
            return False
        self.rest_until = now + self.rest
        return True


R = TypeVar("R", bound=Replica)


class ReplicaPool(Generic[R]):
    """Which replica takes the next request, and each replica's outages, under one lock;
    ``log`` gets a line when a replica goes down and when it is back."""

    def __init__(
        self,
        replicas: Sequence[R],
        down_limit: float = float("inf"),
        clock: Clock = time.monotonic,
        rests: tuple[float, float] = (FIRST_REST, MAX_REST),
        log: logging.Logger | None = None,
    ) -> None:
        self.replicas = list(replicas)
        self.down_limit, self.rests = down_limit, rests
        self._clock, self._log = clock, log
        self._ready = threading.Condition()
        self._turn = 0
        self._stopped: str | None = None  # why every take now raises PoolDown

    def choose(
        self,
        avoid: R | None = None,
        load: Callable[[R], int] | None = None,
        tries: bool = True,
    ) -> R | None:
        """The least loaded replica that can take a request (without ``tries``, none that is
        down), or ``None``. Call under the lock, or on a pool of one caller."""
        now, count = self._clock(), len(self.replicas)
        open_ = [
            (r is avoid, r.in_flight if load is None else load(r), (i - self._turn) % count, i)
            for i, r in enumerate(self.replicas)
            if r.down_since is None or (tries and now >= r.rest_until and r.in_flight == 0)
        ]
        if not open_:
            return None
        index = min(open_)[3]
        self._turn = (index + 1) % count
        return self.replicas[index]

    def last_down(self) -> R:
        return max(self.replicas, key=lambda r: r.down_since or 0.0)  # ties: the earlier

    def take(self, avoid: R | None = None) -> tuple[R, bool]:
        """The replica of the next request, and whether it is down (its one try after its rest).
        Waits while every replica rests; raises :class:`PoolDown` past the down limit."""
        with self._ready:
            while True:
                now, down = self._clock(), [r.down_since for r in self.replicas]
                # Since when every replica is down (when the last one went down), or None.
                since = None if None in down else max(s for s in down if s is not None)
                if self._stopped is None and since is not None and now - since >= self.down_limit:
                    said = ", ".join(f"{r.url} ({r.last_error})" for r in self.replicas)
                    self._stopped = (
                        f"every endpoint has been down for {self.down_limit:g} s: {said}"
                    )
                    self._ready.notify_all()
                if self._stopped is not None:
                    raise PoolDown(self._stopped)
                chosen = self.choose(avoid)
                if chosen is not None:
                    chosen.in_flight += 1
                    chosen.requests += 1
                    return chosen, chosen.down_since is not None
                # Every replica is down (one that is up always takes a request): until a rest
                # ends, the limit passes, or an answer or a failure changes that.
                ends = [r.rest_until for r in self.replicas if r.rest_until > now]
                limit = (now if since is None else since) + self.down_limit
                self._ready.wait(min([limit, *ends]) - now)

    def answered(self, replica: R, failed: bool = False) -> None:
        """``replica`` answered a request (``failed``: with a server error): it is up."""
        with self._ready:
            replica.in_flight -= 1
            replica.failures += failed
            gone = replica.came_back(self._clock())
            if gone is not None:
                if self._log is not None:
                    said = "endpoint %s is back after %.1f s (%d failed requests)"
                    self._log.warning(said, replica.url, gone, replica.failed_in_outage)
                self._ready.notify_all()

    def timed_out(self, replica: R) -> None:
        """A request to ``replica`` got no answer in time: a failure, and no news of it."""
        with self._ready:
            replica.in_flight -= 1
            replica.failures += 1
            self._ready.notify_all()  # a resting replica may take its next try

    def failed(self, replica: R, tried: bool, error: str, task: Hashable = None) -> bool:
        """``replica`` is away for a request (``tried``: its try after a rest; ``task``: the
        request's task when its answer may be the request's own). Whether it is down now."""
        with self._ready:
            now = self._clock()
            replica.in_flight -= 1
            replica.failures += 1
            replica.last_error = error
            if task is not None and replica.down_since is None and replica.suspect in (None, task):
                replica.suspect = task  # one task's requests alone: maybe the request's fault
                return False
            if replica.went_away(now, self.rests, tried) and self._log is not None:
                up = sum(r.down_since is None for r in self.replicas)
                where = (
                    "its requests go to the other endpoints"
                    if up
                    else f"requests wait (the run stops once every endpoint has been down "
                    f"for {self.down_limit:g} s)"
                )
                self._log.warning("endpoint %s is down (%s): %s", replica.url, error, where)
            replica.failed_in_outage += 1
            self._ready.notify_all()
            return True

    def counts(self) -> dict[str, dict[str, int]]:
        names = ("requests", "failures", "outages")
        return {r.url: {name: getattr(r, name) for name in names} for r in self.replicas}

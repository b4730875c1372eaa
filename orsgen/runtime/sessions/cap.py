"""The session cap (docs/scale.md, "A session cap"): every session takes a :class:`Place` first
and gives it back only once it is gone (its open failed or was cut short, or the server answered
its delete), so the server never counts more than the cap.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable
from typing import Any

from orsgen.runtime.errors import OrsRuntimeError
from orsgen.runtime.transport.process import Records, current


class SessionCapError(OrsRuntimeError, ValueError):
    """``max_sessions`` is lower than what one training step holds open at once."""


class NoPlace(Exception):
    """No place came free before the reset's deadline (its reconnect window)."""


# Claims a place for one session on a server URL: ``wait`` or not. ``None``: none free.
Claim = Callable[[str, bool], "Place | None"]


class Place:
    """One session's claim on its class's cap; ``release`` is idempotent."""

    __slots__ = ("_places", "url", "thread", "closing", "__weakref__")

    def __init__(self, places: Places, url: str) -> None:
        self._places: Places | None = places
        self.url = url  # the server the session is on
        self.thread = threading.get_ident()  # which thread opened the session
        self.closing = False  # its close has started: the place frees itself soon

    def release(self) -> None:
        places, self._places = self._places, None
        if places is not None:
            places.give_back(self)


class Places:
    """The places of one adapter class in one process."""

    def __init__(self, owner: type) -> None:
        self.owner = owner
        self._cond = threading.Condition()
        self._taken: set[Place] = set()
        # Live instances of the class (in a sync GRPOTrainer, one per rollout of a step),
        # each with the cap it was made with.
        self._instances: weakref.WeakKeyDictionary[Any, int | None] = weakref.WeakKeyDictionary()

    def adopt(self, instance: Any, limit: int | None) -> None:
        with self._cond:
            self._instances[instance] = limit

    def open_on(self) -> Counter[str]:
        """This class's sessions per server URL (open, opening or closing)."""
        with self._cond:
            return Counter(p.url for p in self._taken)

    def try_take(self, limit: int | None, url: str = "") -> Place | None:
        """A place if one is free now (or there is no cap), else ``None``."""
        with self._cond:
            return self._take_locked(limit, url)

    def take(self, limit: int | None, deadline: float, url: str = "") -> Place | None:
        """A place, waiting for one until ``deadline`` (``time.monotonic()``); ``None`` when it
        passed. Raises :class:`SessionCapError` when waiting could never end."""
        with self._cond:
            while True:
                place = self._take_locked(limit, url)
                if place is not None:
                    return place
                assert limit is not None
                if self._self_blocked():
                    raise SessionCapError(self._too_low(limit))
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(timeout=min(left, 1.0))

    def give_back(self, place: Place) -> None:
        with self._cond:
            self._taken.discard(place)
            self._cond.notify_all()

    def _take_locked(self, limit: int | None, url: str) -> Place | None:
        if limit is not None and len(self._taken) >= limit:
            return None
        place = Place(self, url)
        self._taken.add(place)
        return place

    def _self_blocked(self) -> bool:
        """The main thread holds every place through live sessions it opened itself (a sync
        ``GRPOTrainer`` resetting a batch larger than the cap: nothing would free one)."""
        if threading.current_thread() is not threading.main_thread():
            return False  # a pool thread: other threads go on and free places
        me = threading.get_ident()
        return all(p.thread == me and not p.closing for p in self._taken)

    def _too_low(self, limit: int) -> str:
        # TRL makes one instance per rollout of a step, all from one factory: count those
        # made with this same cap.
        pool = sum(1 for made_with in self._instances.values() if made_with == limit)
        needed = max(limit + 1, pool)
        name = self.owner.__name__
        return (
            f"max_sessions={limit} is lower than what one training step holds open at once: "
            f"this thread holds {limit} open {name} session(s) and asks for another, and "
            f"nothing it waits on can free one (GRPOTrainer resets a step's whole batch before "
            f"it generates). {pool} {name} instance(s) with max_sessions={limit} exist in this "
            f"process: set max_sessions to at least {needed} (or lower the batch: "
            "per_device_train_batch_size x steps_per_generation)"
        )


class Caps(Records[type, Places]):
    """The process's places by adapter class (a :meth:`Process.part`)."""


def of(owner: type) -> Places:
    """The places of ``owner`` (an adapter class) in this process (fresh after a fork)."""
    return current().part(Caps).get(owner, lambda: Places(owner))


def claim(owner: type, limit: int | None, window: float) -> Claim:
    """A claim for one reset of ``owner``: waiting ones wait at most ``window`` seconds from
    now and raise :class:`NoPlace` past it; the others (prefetch) never wait."""
    places, deadline = of(owner), time.monotonic() + window

    def take(url: str, wait: bool) -> Place | None:
        if not wait:
            return places.try_take(limit, url)
        place = places.take(limit, deadline, url)
        if place is None:
            raise NoPlace(
                f"no free place among max_sessions={limit} within reconnect_for={window:g} s"
            )
        return place

    return take

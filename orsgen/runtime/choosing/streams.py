"""This process's task-sampler streams and the resume protocol that carries their state
across a checkpoint (docs/curriculum.md, "Resuming"). A *stream* (:class:`StreamKey`) is one
adapter class's task choice on one server and split; its :class:`TaskSampler` is made at the
stream's first reset and shared by its adapter instances. Saved states are staged by key and
each stream loads its own when made; one staged under another key is never handed over, but
for a lone saved stream of the same class and split (a server on a new address).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from orsgen.runtime.records.episode import Outcome
from orsgen.runtime.transport.process import current

logger = logging.getLogger("orsgen.runtime")


class TaskSampler(Protocol):
    """Which task the next reset of a stream opens; the built-in one is
    :class:`~orsgen.runtime.choosing.chooser.Chooser`."""

    def choose(self) -> int:
        """The next task index (thread-safe: AsyncGRPO resets from a thread pool)."""
        ...

    def observe(self, task_index: int, outcome: Outcome) -> None:
        """A rollout of ``task_index`` that this sampler chose settled with ``outcome``
        (once per rollout, when its reward is computed)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """What :meth:`load_state_dict` needs to continue where this sampler is (JSON-able)."""
        ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True, order=True)
class StreamKey:
    """A stream: the adapter class (``module.qualname``), its server and its split."""

    owner: str
    server: str
    split: str

    def to_json(self) -> dict[str, str]:
        return {"class": self.owner, "server": self.server, "split": self.split}

    @staticmethod
    def from_json(value: Mapping[str, Any]) -> StreamKey:
        return StreamKey(str(value["class"]), str(value["server"]), str(value["split"]))

    def __str__(self) -> str:
        return f"{self.owner} on {self.server}, split {self.split!r}"


class Samplers:
    """This process's task samplers, by stream, and the states staged for them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[Hashable, tuple[StreamKey, TaskSampler]] = {}
        self._staged: dict[StreamKey, Mapping[str, Any]] = {}
        self._changes = 0  # choices and outcomes so far: the worker's writer skips idle periods

    def changed(self) -> None:
        with self._lock:
            self._changes += 1

    def changes(self) -> int:
        """How many times :meth:`changed` was called (a new stream's state counts too)."""
        with self._lock:
            return self._changes + len(self._items)

    def peek(self, stream: Hashable) -> TaskSampler | None:
        with self._lock:
            found = self._items.get(stream)
            return None if found is None else found[1]

    def get(
        self, stream: Hashable, key: StreamKey, make: Callable[[], TaskSampler]
    ) -> tuple[TaskSampler, bool]:
        """The sampler of ``stream`` (whose key is ``key``) and whether this call made it;
        a new one continues from the state staged under its key."""
        with self._lock:
            found = self._items.get(stream)
            if found is not None:
                return found[1], False
            made = make()
            state = self._take(key)
            if state is not None:
                made.load_state_dict(state)
                logger.warning("%s: task choice resumed from the checkpoint", key)
            self._items[stream] = (key, made)
            return made, True

    def all(self) -> list[TaskSampler]:
        with self._lock:
            return [sampler for _, sampler in self._items.values()]

    def saved(self) -> list[tuple[StreamKey, dict[str, Any]]]:
        """Every stream's key and ``state_dict()``, by key; two streams under one key cannot be told
        apart on resume: refused."""
        with self._lock:
            items = list(self._items.values())
        twice = sorted(k for k, n in Counter(key for key, _ in items).items() if n > 1)
        if twice:
            raise ValueError(
                f"{twice[0]} chooses tasks in two streams (different seed, num_tasks, "
                "indices or group size in one process), which a checkpoint cannot tell "
                "apart on resume: give its adapters one task setting"
            )
        return sorted(((key, sampler.state_dict()) for key, sampler in items), key=lambda x: x[0])

    def stage(self, states: list[tuple[StreamKey, Mapping[str, Any]]]) -> None:
        """Hand saved states to their streams: at once if one exists, else when it is made."""
        with self._lock:
            self._staged = dict(states)
            for key, sampler in self._items.values():
                state = self._take(key)
                if state is not None:
                    sampler.load_state_dict(state)
                    self._changes += 1

    def _take(self, key: StreamKey) -> Mapping[str, Any] | None:
        state = self._staged.pop(key, None)
        if state is not None:
            return state
        alike = [k for k in self._staged if (k.owner, k.split) == (key.owner, key.split)]
        if len(alike) == 1:
            logger.warning("%s: resumes the task choice saved for %s", key, alike[0])
            return self._staged.pop(alike[0])
        return None

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._staged.clear()


def samplers() -> Samplers:
    return current().part(Samplers)

"""Which task a reset opens when the trainer gives none (environment-owned data).

TRL 1.16 lets ``train_dataset`` be omitted when an ``environment_factory`` owns the data:
``reset()`` then receives only ``prompt=`` (``trl/trainer/grpo_trainer.py``, around line
862: identical placeholder rows). The adapter chooses the task itself, here:

- the candidate tasks are the split's, restricted by ``num_tasks`` / ``indices`` exactly as
  ``load_tasks`` restricts them;
- a pass visits every candidate once, in an order shuffled by ``seed`` (pass ``p`` uses
  ``Random(f"{seed}:{p}")``, so a run is reproducible and each pass differs);
- each task is handed out ``group_size`` times in a row, so the G consecutive resets of a
  GRPO group open the same task. Both trainers reset one group's rollouts one after
  another in one process: ``GRPOTrainer`` in slot order (``RepeatSampler`` puts a group's
  rows next to each other), AsyncGRPO's worker awaiting each ``reset`` before drawing the
  next row (``async_rollout_worker.py``, around lines 549-583 and 878-887).

Under several processes a group's rows can land on different ranks (the sampler's own
diagram: ``GPU0: 0 0 1 | GPU1: 1 2 2``), and no rank can tell which of its resets belong
to a group another rank also serves. :func:`check_single_process` therefore refuses to
choose there, with an error that says to pass ``train_dataset=load_tasks(...)``.

Pure: no I/O. The adapter fetches the split's task count and says once, in the log, what
it chose.
"""

from __future__ import annotations

import os
import random
import sys
import threading
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

from orsgen.runtime.errors import OrsRuntimeError
from orsgen.runtime.process import current

DEFAULT_SEED = 0


class TaskChoiceError(OrsRuntimeError, ValueError):
    """``reset()`` got no task and the adapter cannot choose one safely."""


def candidates(count: int, num_tasks: int | None, indices: Sequence[int] | None) -> list[int]:
    """The task indices a chooser samples from: ``load_tasks``' restriction of a split of
    ``count`` tasks (the first ``num_tasks``, or exactly ``indices``)."""
    if num_tasks is not None and indices is not None:
        raise ValueError("pass num_tasks or indices, not both")
    if indices is not None:
        chosen = [int(i) for i in indices]
        bad = [i for i in chosen if not 0 <= i < count]
        if bad:
            raise ValueError(f"indices {bad} are outside the split's {count} tasks")
        if not chosen:
            raise ValueError("indices is empty: there is no task to choose")
        return chosen
    if num_tasks is not None and num_tasks < 1:
        raise ValueError(f"num_tasks must be at least 1, got {num_tasks}")
    top = count if num_tasks is None else min(count, num_tasks)
    if top < 1:
        raise ValueError("the split has no tasks: there is no task to choose")
    return list(range(top))


def order(tasks: Sequence[int], seed: int, group_size: int) -> Iterator[int]:
    """Endless task indices: each pass every task once, shuffled by ``seed``, and each task
    ``group_size`` times in a row."""
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}")
    passes = 0
    while True:
        shuffled = list(tasks)
        random.Random(f"{seed}:{passes}").shuffle(shuffled)
        for task in shuffled:
            for _ in range(group_size):
                yield task
        passes += 1


def world_size() -> int:
    """How many training processes there are: torch.distributed's world when it is
    initialised, else the launcher's ``WORLD_SIZE`` (torchrun, accelerate)."""
    # Never imported here: a process that has not imported it has not initialised it.
    dist: Any = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_world_size())
    except Exception:  # noqa: BLE001 - a backend that cannot answer
        pass
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def check_single_process(env_label: str) -> None:
    """Refuse to choose tasks when a group's resets may be spread over processes."""
    size = world_size()
    if size > 1:
        raise TaskChoiceError(
            f"{env_label}: reset() got no task_index or task_spec (train_dataset=None) in a "
            f"run of {size} processes. A GRPO group's rollouts can be split across processes, "
            "which cannot agree on one task per group without the dataset: pass "
            "train_dataset=load_tasks(...) to the trainer."
        )


class Chooser:
    """One stream of chosen tasks, shared by every adapter instance of a stream key in a
    process. Thread-safe (AsyncGRPO resets from a thread pool)."""

    def __init__(self, tasks: Sequence[int], seed: int, group_size: int) -> None:
        self.tasks = list(tasks)
        self.seed = seed
        self.group_size = group_size
        self._order = order(self.tasks, seed, group_size)
        self._lock = threading.Lock()
        self.handed_out = 0

    def next(self) -> int:
        with self._lock:
            self.handed_out += 1
            return next(self._order)

    def describe(self) -> str:
        return (
            f"{len(self.tasks)} tasks in an order shuffled by seed={self.seed}, each task for "
            f"{self.group_size} consecutive resets (one GRPO group)"
        )


class Choosers:
    """The choosers of this process (a :meth:`~orsgen.runtime.process.Process.part`: a
    forked child starts with none, so it never continues its parent's streams)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[Hashable, Chooser] = {}

    def peek(self, key: Hashable) -> Chooser | None:
        with self._lock:
            return self._items.get(key)

    def get(
        self, key: Hashable, tasks: Sequence[int], seed: int, group_size: int
    ) -> tuple[Chooser, bool]:
        """The chooser for ``key`` and whether it was made by this call."""
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                return found, False
            made = self._items[key] = Chooser(tasks, seed, group_size)
            return made, True

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def choosers() -> Choosers:
    """This process's choosers."""
    return current().part(Choosers)

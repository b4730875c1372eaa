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

The choice is a seam: a :class:`TaskSampler` (``choose``, ``observe`` a settled outcome,
``state_dict`` / ``load_state_dict``), made per stream by the adapter's ``sampler=`` factory;
:class:`Chooser` above is the default. The adapter calls ``observe`` with each settled
outcome of a rollout whose task the sampler chose, so a curriculum can plug in here.

Pure: no I/O. The adapter fetches the split's task count and says once, in the log, what
it chose.
"""

from __future__ import annotations

import logging
import os
import random
import sys
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from orsgen.runtime.errors import OrsRuntimeError
from orsgen.runtime.rollouts import trainer_facts
from orsgen.runtime.rollouts.episode import Outcome
from orsgen.runtime.transport.process import current

DEFAULT_SEED = 0

logger = logging.getLogger("orsgen.runtime")


class TaskChoiceError(OrsRuntimeError, ValueError):
    """``reset()`` got no task and the adapter cannot choose one safely."""


@dataclass(frozen=True)
class TaskChoice:
    """How an adapter chooses tasks for resets that got none (part of its ``AdapterConfig``):
    ``group_size`` ``None`` learns GRPO's group size from the trainer."""

    seed: int | None = None
    num_tasks: int | None = None
    indices: tuple[int, ...] | None = None
    group_size: int | None = None
    # Makes a stream's sampler from its candidate tasks, seed and group size.
    sampler: SamplerFactory = field(default_factory=lambda: Chooser)

    @staticmethod
    def of(
        seed: int | None,
        num_tasks: int | None,
        indices: Sequence[int] | None,
        group_size: int | None,
        sampler: SamplerFactory | None = None,
    ) -> TaskChoice:
        if num_tasks is not None and indices is not None:
            raise ValueError("pass num_tasks or indices, not both")
        if sampler is not None and not callable(sampler):
            raise TypeError(
                f"sampler must be a callable (tasks, seed, group_size), got {sampler!r}"
            )
        return TaskChoice(
            seed=None if seed is None else int(seed),
            num_tasks=num_tasks,
            indices=None if indices is None else tuple(int(i) for i in indices),
            group_size=group_size,
            sampler=Chooser if sampler is None else sampler,
        )


class TaskSampler(Protocol):
    """Which task the next reset of a stream opens (a stream: one adapter class, server and
    split in one process; see :func:`sampler_for`). :class:`Chooser` (uniform seeded
    passes) is today's; a curriculum implements the same four methods."""

    def choose(self) -> int:
        """The next task index (thread-safe: AsyncGRPO resets from a thread pool)."""
        ...

    def observe(self, task_index: int, outcome: Outcome) -> None:
        """A rollout of ``task_index`` that this sampler chose settled with ``outcome``
        (once per rollout, when its reward is computed)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """What :meth:`load_state_dict` needs to continue where this sampler is."""
        ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None: ...


# (candidate tasks, seed, group size) -> the stream's sampler.
SamplerFactory = Callable[[Sequence[int], int, int], TaskSampler]


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
    """Today's :class:`TaskSampler`: uniform seeded passes (:func:`order`), whatever the
    outcomes. Thread-safe."""

    def __init__(self, tasks: Sequence[int], seed: int, group_size: int) -> None:
        self.tasks = list(tasks)
        self.seed = seed
        self.group_size = group_size
        self._order = order(self.tasks, seed, group_size)
        self._lock = threading.Lock()
        self._given = 0  # choices so far: where the order resumes after load_state_dict

    def choose(self) -> int:
        with self._lock:
            self._given += 1
            return next(self._order)

    def observe(self, task_index: int, outcome: Outcome) -> None:
        """Uniform passes ignore outcomes."""

    def state_dict(self) -> dict[str, Any]:
        with self._lock:
            return {"tasks": list(self.tasks), "seed": self.seed, "given": self._given}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if list(state["tasks"]) != self.tasks or state["seed"] != self.seed:
            raise ValueError("this state is of a sampler with other tasks or another seed")
        with self._lock:
            self._order = order(self.tasks, self.seed, self.group_size)
            self._given = int(state["given"])
            for _ in range(self._given):
                next(self._order)

    def describe(self) -> str:
        return (
            f"{len(self.tasks)} tasks in an order shuffled by seed={self.seed}, each task for "
            f"{self.group_size} consecutive resets (one GRPO group)"
        )


class Samplers:
    """The task samplers of this process, by stream (a
    :meth:`~orsgen.runtime.transport.process.Process.part`: a forked child starts with none,
    so it never continues its parent's streams)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[Hashable, TaskSampler] = {}

    def peek(self, key: Hashable) -> TaskSampler | None:
        with self._lock:
            return self._items.get(key)

    def get(self, key: Hashable, make: Callable[[], TaskSampler]) -> tuple[TaskSampler, bool]:
        """The sampler for ``key`` and whether it was made by this call."""
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                return found, False
            made = self._items[key] = make()
            return made, True

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def samplers() -> Samplers:
    """This process's task samplers."""
    return current().part(Samplers)


def describe(sampler: TaskSampler) -> str:
    """What a sampler does, for the log line of a stream's first choice."""
    if isinstance(sampler, Chooser):
        return sampler.describe()
    return f"{type(sampler).__name__} (a custom task sampler)"


def sampler_for(
    settings: TaskChoice, key: Hashable, label: str, split: str, split_size: Callable[[], int]
) -> TaskSampler:
    """The sampler of this stream (``key``: class, server, split), made on its first use:
    every instance of a stream in a process shares one. The first use says, once, what it
    does; it raises :class:`TaskChoiceError` when groups could not stay whole."""
    check_single_process(label)
    facts = trainer_facts.facts()
    group = settings.group_size or (facts.num_generations if facts else None)
    if group is None:
        raise TaskChoiceError(
            f"{label}: reset() got no task_index or task_spec, and the GRPO group size is "
            "unknown (no GRPOTrainer or AsyncGRPO worker is calling): pass group_size= "
            "(your num_generations) to the adapter, or train_dataset=load_tasks(...) to the trainer."
        )
    seed = settings.seed
    if seed is None:
        seed = facts.seed if facts is not None and facts.seed is not None else DEFAULT_SEED
    stream = (key, settings.num_tasks, settings.indices, seed, group, settings.sampler)
    found = samplers().peek(stream)
    if found is None:
        among = candidates(split_size(), settings.num_tasks, settings.indices)
        found, made = samplers().get(stream, lambda: settings.sampler(among, seed, group))
        if made:
            where = (
                f" (group size from {facts.source})" if facts and not settings.group_size else ""
            )
            logger.warning(
                "%s: reset() got no task (train_dataset=None): the adapter chooses tasks of "
                "split %r itself: %s%s.",
                label,
                split,
                describe(found),
                where,
            )
    return found

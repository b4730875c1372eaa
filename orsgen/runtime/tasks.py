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
diagram: ``GPU0: 0 0 1 | GPU1: 1 2 2``). Every rank therefore maps its own resets onto
the run's global rows (:class:`Layout`: accelerate gives rank ``r`` the ``r``-th block of
``per_device_train_batch_size * steps_per_generation`` rows of each generation) and
chooses by *global group*: a task is a function of the seed and the group index (and,
with a curriculum, of statistics every rank holds alike), so a group split across ranks
stays on one task and all ranks agree on the order. When the layout is unknown (several
processes, no GRPOTrainer calling), :func:`check_single_process` refuses to choose, with
an error that says to pass ``train_dataset=load_tasks(...)``.

Pure: no I/O. The adapter fetches the split's task count and says once, in the log, what
it chose.
"""

from __future__ import annotations

import os
import random
import sys
import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

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


def check_single_process(env_label: str, layout: Layout | None = None) -> None:
    """Refuse to choose tasks when a group's resets may be spread over processes that
    cannot place them (no :class:`Layout`)."""
    size = world_size()
    if size > 1 and (layout is None or layout.world != size):
        raise TaskChoiceError(
            f"{env_label}: reset() got no task_index or task_spec (train_dataset=None) in a "
            f"run of {size} processes. A GRPO group's rollouts can be split across processes, "
            "which cannot agree on one task per group without the dataset: pass "
            "train_dataset=load_tasks(...) to the trainer."
        )


def group_task(tasks: Sequence[int], seed: int, group: int) -> int:
    """The task of global group ``group`` in the seeded uniform passes: the same as the
    ``group``-th block of :func:`order`."""
    shuffled = list(tasks)
    random.Random(f"{seed}:{group // len(shuffled)}").shuffle(shuffled)
    return shuffled[group % len(shuffled)]


@dataclass(frozen=True)
class Layout:
    """Where a rank's resets sit among the run's rows: each generation, rank ``rank`` of
    ``world`` resets rows ``rank * rows .. (rank + 1) * rows - 1`` of ``world * rows``."""

    rank: int
    world: int
    rows: int

    def slot(self, reset: int) -> int:
        """The global row of this rank's ``reset``-th reset (0, 1, ...)."""
        generation, row = divmod(reset, self.rows)
        return (generation * self.world + self.rank) * self.rows + row


class Curriculum(Protocol):
    """What a :class:`Chooser` needs of a curriculum (:mod:`orsgen.runtime.curriculum`)."""

    def start(self, tasks: Sequence[int], seed: int, group_size: int) -> None: ...
    def choose(self, group: int) -> int: ...
    def observe(self, group: int, task: int, reward: float | None) -> None: ...
    def plan_through(self, group: int) -> None: ...
    @property
    def next_group(self) -> int: ...


class Chooser:
    """One stream of chosen tasks, shared by every adapter instance of a stream key in a
    process. Thread-safe (AsyncGRPO resets from a thread pool).

    Without a curriculum, group ``g`` gets :func:`group_task`; with one, the curriculum
    chooses once per group. ``share`` (several processes) exchanges the outcomes the
    ranks observed, at the first reset of each generation: every rank is there, after the
    previous generation was scored and before any task of this one is chosen."""

    def __init__(
        self,
        tasks: Sequence[int],
        seed: int,
        group_size: int,
        curriculum: Curriculum | None = None,
        layout: Layout | None = None,
        share: Callable[[object], list[Any]] | None = None,
    ) -> None:
        self.tasks = list(tasks)
        self.seed = seed
        self.group_size = group_size
        self.curriculum, self.layout, self._share = curriculum, layout, share
        self._first_group = 0  # a curriculum restored from a checkpoint continues there
        if curriculum is not None:
            curriculum.start(self.tasks, seed, group_size)
            self._first_group = curriculum.next_group
        self._lock = threading.Lock()
        self._current: tuple[int, int] | None = None  # (group, task) last chosen
        self._unshared: list[tuple[int, int, float | None]] = []
        self.handed_out = 0

    def next(self) -> int:
        return self.next_choice()[0]

    def next_choice(self) -> tuple[int, int]:
        """The next reset's task and its global GRPO group."""
        with self._lock:
            reset, self.handed_out = self.handed_out, self.handed_out + 1
            layout = self.layout
            if layout is not None and layout.world > 1 and reset % layout.rows == 0:
                generation_start = (reset // layout.rows) * layout.world * layout.rows
                self._exchange(self._first_group + generation_start // self.group_size)
            slot = reset if layout is None else layout.slot(reset)
            group = self._first_group + slot // self.group_size
            if self._current is None or self._current[0] != group:
                if self.curriculum is None:
                    task = group_task(self.tasks, self.seed, group)
                else:
                    task = self.curriculum.choose(group)
                self._current = (group, task)
            return self._current[1], group

    def observe(self, group: int, task: int, reward: float | None) -> None:
        """A settled rollout of ``group``: its reward, ``None`` when it was not scored."""
        if self.curriculum is None:
            return
        with self._lock:
            if self._share is not None and self.layout is not None and self.layout.world > 1:
                self._unshared.append((group, task, reward))
            else:
                self.curriculum.observe(group, task, reward)

    def synchronize(self) -> None:
        """Share the outcomes of the generation in progress now, not at the next one's
        first reset: every rank calls it at the same point (a checkpoint's save, the end of
        training), after which all ranks hold the same curriculum state."""
        with self._lock:
            layout = self.layout
            if layout is None or layout.world <= 1 or self.handed_out == 0:
                return
            generations = -(-self.handed_out // layout.rows)  # the ones that started
            self._exchange(
                self._first_group + generations * layout.world * layout.rows // self.group_size
            )

    def _exchange(self, first_group: int) -> None:
        """Share the outcomes of the generation before the one whose first global group is
        ``first_group``. Its groups are all planned first, so every rank plans them from
        the statistics they were chosen from, whichever rank served them."""
        if self.curriculum is None or self._share is None:
            return
        if first_group > self._first_group:
            self.curriculum.plan_through(first_group - 1)
        mine, self._unshared = self._unshared, []
        for outcomes in self._share(mine):
            for group, task, reward in outcomes:
                self.curriculum.observe(group, task, reward)

    def describe(self) -> str:
        how = (
            f"in an order shuffled by seed={self.seed}"
            if self.curriculum is None
            else f"by a {type(self.curriculum).__name__} seeded by seed={self.seed}"
        )
        where = "" if self.layout is None else f", groups counted across {self.layout.world} ranks"
        return (
            f"{len(self.tasks)} tasks {how}, each task for {self.group_size} consecutive "
            f"resets (one GRPO group){where}"
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

    def get(self, key: Hashable, make: Callable[[], Chooser]) -> tuple[Chooser, bool]:
        """The chooser for ``key`` (``make()`` when there is none) and whether it was made
        by this call."""
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                return found, False
            made = self._items[key] = make()
            return made, True

    def all(self) -> list[Chooser]:
        with self._lock:
            return list(self._items.values())

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def choosers() -> Choosers:
    """This process's choosers."""
    return current().part(Choosers)

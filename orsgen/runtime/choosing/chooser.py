"""The built-in :class:`~orsgen.runtime.choosing.tasks.TaskSampler`: one task per global
GRPO group, by seeded uniform passes or by a curriculum.

A group's rows can land on different ranks (``GPU0: 0 0 1 | GPU1: 1 2 2``), so every rank
maps its resets onto the run's global rows (:class:`Layout`: accelerate gives rank ``r`` the
``r``-th block of ``per_device_train_batch_size * steps_per_generation`` rows) and chooses by
*global group*, from the seed, the group index and statistics every rank holds alike.

Pure: no I/O. Sharing outcomes between ranks is a function handed in (:func:`all_gather`).
"""

from __future__ import annotations

import random
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orsgen.runtime.choosing import curriculum as curricula
from orsgen.runtime.choosing.curriculum import PassRateCurriculum
from orsgen.runtime.records.passk import PASS_THRESHOLD
from orsgen.runtime.records.episode import Outcome

# (group, task, reward) of settled rollouts, exchanged between ranks.
Shared = list[tuple[int, int, float | None]]


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


class Chooser:
    """A stream's task sampler, shared by its adapter instances. Thread-safe (AsyncGRPO
    resets from a thread pool).

    Without a curriculum, pass ``p`` is every task once, shuffled by ``Random(f"{seed}:{p}")``,
    and group ``g`` gets task ``g % len(tasks)`` of pass ``g // len(tasks)``. Groups are
    numbered from the curriculum's ``first_group``, the one group counter (0 for the uniform
    passes)."""

    def __init__(
        self,
        tasks: Sequence[int],
        seed: int,
        group_size: int,
        pass_threshold: float = PASS_THRESHOLD,
        *,
        curriculum: PassRateCurriculum | None = None,
    ) -> None:
        self.tasks = list(tasks)
        self.seed = seed
        self.group_size = group_size
        self.curriculum = curriculum
        self.layout: Layout | None = None  # spread() sets both under several processes
        self._share: Callable[[Shared], list[Shared]] | None = None
        if curriculum is not None:
            curriculum.start(self.tasks, seed, group_size, pass_threshold)
        self._lock = threading.Lock()
        self._current: tuple[int, int] | None = None  # (group, task) last chosen
        self._pass: tuple[int, list[int]] | None = None  # the uniform pass in use, shuffled
        self._unshared: Shared = []
        # task -> the groups of this process's choices on it whose outcome has not come:
        # TaskSampler.observe names the task, a task's rollouts settle in the order chosen.
        self._waiting: dict[int, deque[int]] = {}
        self.handed_out = 0

    def spread(self, layout: Layout, share: Callable[[Shared], list[Shared]]) -> None:
        """Choose by global group across ``layout``'s ranks, sharing outcomes by ``share``."""
        with self._lock:
            if self.handed_out:
                raise RuntimeError("a chooser is spread over ranks before its first choice")
            self.layout, self._share = layout, share

    def choose(self) -> int:
        with self._lock:
            task, group = self._next()
            if self.curriculum is not None:
                self._waiting.setdefault(task, deque()).append(group)
            return task

    def observe(self, task_index: int, outcome: Outcome) -> None:
        """A settled rollout this chooser chose: only a score says how hard the task is,
        so unfinished and failed rollouts count as no outcome, never as failures."""
        if self.curriculum is None:
            return
        reward = outcome.reward if outcome.kind == "scored" else None
        with self._lock:
            waiting = self._waiting.get(task_index)
            if not waiting:
                return  # not one of this chooser's choices
            group = waiting.popleft()
            if not waiting:  # at catalog scale most tasks wait for nothing: hold no deque
                del self._waiting[task_index]
            if self._share is not None and self.layout is not None and self.layout.world > 1:
                self._unshared.append((group, task_index, reward))
            else:
                self.curriculum.observe(group, task_index, reward)

    def state_dict(self) -> dict[str, Any]:
        with self._lock:
            state: dict[str, Any] = {
                "tasks": list(self.tasks),
                "seed": self.seed,
                "given": self.handed_out,
            }
            if self.curriculum is not None:
                state["curriculum"] = self.curriculum.state_dict()
            return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if list(state["tasks"]) != self.tasks or state["seed"] != self.seed:
            raise ValueError("this state is of a sampler with other tasks or another seed")
        if (self.curriculum is None) != ("curriculum" not in state):
            raise ValueError("this state is of a sampler with another curriculum")
        with self._lock:
            if self.curriculum is not None:
                self.curriculum.load_state_dict(state["curriculum"])
            self.handed_out, self._current = int(state["given"]), None
            self._waiting.clear()

    def _next(self) -> tuple[int, int]:
        reset, self.handed_out = self.handed_out, self.handed_out + 1
        layout = self.layout
        first = 0 if self.curriculum is None else self.curriculum.first_group
        if layout is not None and layout.world > 1 and reset % layout.rows == 0:
            self._exchange(reset // layout.rows)
        slot = reset if layout is None else layout.slot(reset)
        group = first + slot // self.group_size
        if self._current is None or self._current[0] != group:
            if self.curriculum is None:  # the uniform passes, one shuffle per pass
                uniform_pass, at = divmod(group, len(self.tasks))
                if self._pass is None or self._pass[0] != uniform_pass:
                    shuffled = list(self.tasks)
                    random.Random(f"{self.seed}:{uniform_pass}").shuffle(shuffled)
                    self._pass = (uniform_pass, shuffled)
                task = self._pass[1][at]
            else:
                task = self.curriculum.choose(group)
            self._current = (group, task)
        return self._current[1], group

    def synchronize(self) -> None:
        """Share the outcomes of the generation in progress now: every rank calls it at the same
        point (a checkpoint's save, the end of training), so all then hold the same state."""
        with self._lock:
            layout = self.layout
            if layout is None or layout.world <= 1 or self.handed_out == 0:
                return
            self._exchange(-(-self.handed_out // layout.rows))  # the generations that started

    def _exchange(self, generations: int) -> None:
        """Share the outcomes of the stream's generations before its ``generations``-th, all their
        groups planned first, so every rank plans them from the statistics they were chosen from."""
        if self.curriculum is None or self._share is None or self.layout is None:
            return
        first = self.curriculum.first_group
        start = first + generations * self.layout.world * self.layout.rows // self.group_size
        if start > first:
            self.curriculum.plan_through(start - 1)
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


@dataclass(frozen=True)
class CurriculumFactory:
    """The sampler factory ``curriculum=`` selects: ``"pass_rate"`` makes one curriculum per
    stream; a :class:`PassRateCurriculum` object (compared by identity) shares one stream."""

    curriculum: str | PassRateCurriculum

    def __call__(
        self, tasks: Sequence[int], seed: int, group_size: int, pass_threshold: float
    ) -> Chooser:
        """``pass_threshold``: the adapter's, which the curriculum's pools judge by."""
        made = curricula.make(self.curriculum)
        return Chooser(tasks, seed, group_size, pass_threshold, curriculum=made)


def all_gather(mine: object) -> list[Any]:
    """Every rank's ``mine``, in rank order, over the trainer's ``torch.distributed`` group
    (``[mine]`` without one). Called at each generation's first reset, which every rank reaches
    (GRPOTrainer resets its whole generation batch first), so no rank misses the collective."""
    # Never imported here: a process that has not imported it has not initialised it.
    dist: Any = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return [mine]
    gathered: list[Any] = [None] * int(dist.get_world_size())
    dist.all_gather_object(gathered, mine)
    return gathered

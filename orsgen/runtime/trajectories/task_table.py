"""Per-task visibility: which task each rollout ran on, and how each task fares.

- TRL's completions table: ``outcome_reward`` passes each rollout's task index and split to
  TRL's ``log_extra`` (columns :data:`TASK_INDEX` and :data:`TASK_SPLIT`).
- A per-task :class:`TaskTable`, which ``TaskTableCallback`` writes as ``ors_tasks.csv``.

A task is *passed* by a rollout that passes by the pass rule (:func:`~orsgen.runtime.records.passk.
passes` with its adapter's ``pass_threshold``); the pass rate and the mean reward are over
scored rollouts only, so unscored and failed rollouts never count as the task's failures.
"""

from __future__ import annotations

import csv
import io
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orsgen.runtime.records.passk import PASS_THRESHOLD, passes
from orsgen.runtime.records.episode import Outcome
from orsgen.rundir import write_whole
from orsgen.runtime.transport.process import current

TASK_INDEX = "task_index"
TASK_SPLIT = "task_split"
COLUMNS: tuple[str, ...] = (
    "split",
    "task_index",
    "rollouts",
    "scored",
    "pass_rate",
    "mean_reward",
    "last_step",
)

Task = tuple[str, int | None]  # (split, task index); None: opened on a task_spec


def log_tasks(log_extra: Callable[[str, list[Any]], object], tasks: Sequence[Task | None]) -> None:
    """Each rollout's task index and split as two columns of TRL's completions table (``None``
    for an environment that is not an ORS adapter)."""
    log_extra(TASK_INDEX, [None if t is None else t[1] for t in tasks])
    log_extra(TASK_SPLIT, [None if t is None else t[0] for t in tasks])


@dataclass
class TaskRow:

    rollouts: int = 0
    scored: int = 0
    passed: int = 0
    reward_sum: float = 0.0
    last_step: int | None = None

    def add(self, outcome: Outcome, step: int | None, threshold: float = PASS_THRESHOLD) -> None:
        self.rollouts += 1
        if outcome.kind == "scored" and outcome.reward is not None:
            self.scored += 1
            self.reward_sum += outcome.reward
            self.passed += int(passes(outcome.reward, threshold))
        if step is not None:
            self.last_step = step if self.last_step is None else max(self.last_step, step)


class TaskTable:
    """This process's per-task counts (a ``Process.part``). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[Task, TaskRow] = {}

    def add(
        self, task: Task, outcome: Outcome, step: int | None, threshold: float = PASS_THRESHOLD
    ) -> None:
        with self._lock:
            self._rows.setdefault(task, TaskRow()).add(outcome, step, threshold)

    def clear(self) -> None:
        """Forget every task (say, before a second training run in the same process)."""
        with self._lock:
            self._rows.clear()

    def rows(self) -> list[dict[str, Any]]:
        """One dict per task (:data:`COLUMNS`), by split and task index."""
        with self._lock:
            items = sorted(
                self._rows.items(), key=lambda kv: (kv[0][0], -1 if kv[0][1] is None else kv[0][1])
            )
            return [_row(task, row) for task, row in items]

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the table as CSV, replacing the file whole (a reader never sees half)."""
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.rows())
        write_whole(Path(path), text.getvalue())


def _row(task: Task, row: TaskRow) -> dict[str, Any]:
    scored = row.scored
    return {
        "split": task[0],
        "task_index": "" if task[1] is None else task[1],
        "rollouts": row.rollouts,
        "scored": scored,
        "pass_rate": round(row.passed / scored, 6) if scored else "",
        "mean_reward": round(row.reward_sum / scored, 6) if scored else "",
        "last_step": "" if row.last_step is None else row.last_step,
    }


def table() -> TaskTable:
    return current().part(TaskTable)


def record(
    tasks: Sequence[Task | None],
    outcomes: Sequence[Outcome | None],
    trainer_state: Any,
    thresholds: Sequence[float],
) -> None:
    """Add a batch scored by a trainer (``trainer_state`` given), each rollout judged with its
    adapter's pass threshold; a batch scored outside a trainer is left out."""
    if trainer_state is None:
        return
    step = getattr(trainer_state, "global_step", None)  # the step the batch trains, numbered
    step = step + 1 if isinstance(step, int) else None  # as TRL's completions table does
    for task, outcome, limit in zip(tasks, outcomes, thresholds):
        if task is not None and outcome is not None:
            table().add(task, outcome, step, limit)

"""Reading the trajectory log back, for the task table of rollouts scored in other processes.

:class:`TrajectoryFiles` returns only the complete lines appended since its last read, by
the torn-line rule of :mod:`orsgen.rundir`. It reads during training, which never stops on
its own log: a whole line that is not a JSON object is skipped, with one warning naming the
file and the line (the offline readers, ``orsgen view`` among them, stop there instead).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, get_args

from orsgen.runtime.records.passk import PASS_THRESHOLD
from orsgen.runtime.records.episode import Kind, Outcome
from orsgen.rundir import RunError, complete, parsed
from orsgen.runtime.trajectories.task_table import Task, TaskTable
from orsgen.runtime.trajectories.writer import process_paths

logger = logging.getLogger("orsgen.runtime")

_KINDS: tuple[str, ...] = get_args(Kind)


class TrajectoryFiles:
    """The trajectory files of every process for the configured ``path``, read
    incrementally. Not thread-safe: one reader (the trainer's callback) owns it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._offsets: dict[Path, int] = {}  # bytes already read, to the end of a line
        self._warned = False  # of a malformed line: once

    def files(self) -> list[Path]:
        return process_paths(self.path)

    def skip_existing(self) -> None:
        """Read nothing that is already there (say, a run before this one appended to the
        same path): later reads start after the last complete line of every file."""
        for file in self.files():
            self._offsets[file] = len(complete(file.read_bytes()))

    def new_lines(self) -> list[dict[str, Any]]:
        """The complete lines appended to any of the files since the last read."""
        found: list[dict[str, Any]] = []
        for file in self.files():
            found.extend(self._read(file))
        return found

    def _read(self, file: Path) -> Iterable[dict[str, Any]]:
        offset = self._offsets.get(file, 0)
        try:
            with file.open("rb") as handle:
                if os.fstat(handle.fileno()).st_size < offset:
                    offset = 0  # a new file took the old one's name
                handle.seek(offset)
                whole = complete(handle.read())
        except OSError as exc:
            logger.warning("could not read trajectory file %s: %s", file, exc)
            return []
        self._offsets[file] = offset + len(whole)
        lines: list[dict[str, Any]] = []
        at = offset
        for raw in whole.splitlines(keepends=True):
            if raw.strip():
                try:
                    lines.append(parsed(raw, file, f"at byte {at}"))
                except RunError:
                    if not self._warned:
                        self._warned = True
                        logger.warning(
                            "%s: line at byte %d is not a JSON object; training goes on "
                            "without it, and without any other such line",
                            file,
                            at,
                        )
            at += len(raw)
        return lines


def pass_threshold(line: dict[str, Any]) -> float:
    """The pass threshold a trajectory line was judged by (older lines: the default)."""
    found = line.get("pass_threshold")
    if isinstance(found, (int, float)) and not isinstance(found, bool):
        return float(found)
    return PASS_THRESHOLD


def task_outcome(line: dict[str, Any]) -> tuple[Task, Outcome] | None:
    """The task and outcome a trajectory line records; ``None`` for a line that has none."""
    split, index = line.get("split"), line.get("task_index")
    kind, reward = line.get("outcome"), line.get("reward")
    if not isinstance(split, str) or kind not in _KINDS:
        return None
    if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
        return None
    if reward is not None and not isinstance(reward, (int, float)):
        return None
    outcome = Outcome(
        None if reward is None else float(reward),
        kind,
        line.get("why_unscored"),
        bool(line.get("finished")),
    )
    return (split, index), outcome


def fold(table: TaskTable, lines: Iterable[dict[str, Any]], step: int | None) -> int:
    """Add every trajectory line to ``table`` at ``step``; how many had no task and outcome."""
    left_out = 0
    for line in lines:
        found = task_outcome(line)
        if found is None:
            left_out += 1
            continue
        table.add(found[0], found[1], step, pass_threshold(line))
    return left_out

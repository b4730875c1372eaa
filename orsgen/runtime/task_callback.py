"""The TRL callback that writes the per-task table (:mod:`orsgen.runtime.trajectories.task_table`)
from one of two sources, never both (docs/curriculum.md, "The completions table and the
per-task table"): this process's scored batches, or every process's trajectory lines.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from orsgen.runtime.trajectories.reader import TrajectoryFiles, fold
from orsgen.runtime.trajectories.task_table import TaskTable, table
from orsgen.runtime.trajectories.writer import JsonlFile, process_path
from orsgen.runtime.transport.identity import identity

FILE_NAME = "ors_tasks.csv"


class TaskTableCallback(TrainerCallback):
    """Write the per-task table to ``<output_dir>/ors_tasks.csv`` (or ``file_name``) at
    every logging step and at the end of training: this process's scored batches, or, with
    ``trajectories=``, every process's trajectory lines for that path. Each training run's
    table holds that run's rollouts only, should the process train more than once."""

    def __init__(
        self,
        file_name: str = FILE_NAME,
        trajectories: str | os.PathLike[str] | JsonlFile | None = None,
    ) -> None:
        self.file_name = file_name
        self.trajectories: TrajectoryFiles | None = None
        if trajectories is not None:
            path = trajectories.path if isinstance(trajectories, JsonlFile) else trajectories
            self.trajectories = TrajectoryFiles(path)
        self._from_lines = TaskTable()  # the trajectory lines' table

    def path(self, args: Any) -> Path:
        output = Path(args.output_dir) / self.file_name
        if self.trajectories is not None:
            return output  # one table for the whole run
        me = identity()
        return process_path(output, me.rank, me.world_size, False)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.trajectories is not None:
            self._from_lines.clear()
            self.trajectories.skip_existing()  # lines of earlier runs on the same path
        else:
            table().clear()  # batches an earlier run in this process scored

    def on_log(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._write(args, state)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._write(args, state)

    def _write(self, args: Any, state: Any) -> None:
        if self.trajectories is None:
            table().write(self.path(args))
            return
        if not identity().is_main:
            return
        step = getattr(state, "global_step", None)
        fold(self._from_lines, self.trajectories.new_lines(), step)
        self._from_lines.write(self.path(args))

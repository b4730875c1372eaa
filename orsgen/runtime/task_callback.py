"""The TRL callback that writes the per-task table (:mod:`orsgen.runtime.rollouts.task_table`)
beside the run's output at every logging step::

    from orsgen.runtime.task_callback import TaskTableCallback
    trainer = GRPOTrainer(..., reward_funcs=outcome_reward, callbacks=[TaskTableCallback()])

It writes ``<output_dir>/ors_tasks.csv`` (``split, task_index, rollouts, scored,
pass_rate, mean_reward, last_step``). Each process writes the rollouts it scored: rank
``r`` of a distributed run writes ``ors_tasks.rank<r>.csv``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from orsgen.runtime.rollouts.task_table import table
from orsgen.runtime.rollouts.tasks import world_size
from orsgen.runtime.rollouts.trajectories import process_path

FILE_NAME = "ors_tasks.csv"


class TaskTableCallback(TrainerCallback):
    """Write this process's per-task table to ``<output_dir>/ors_tasks.csv`` (or
    ``file_name``) at every logging step and at the end of training."""

    def __init__(self, file_name: str = FILE_NAME) -> None:
        self.file_name = file_name

    def path(self, args: Any) -> Path:
        rank = int(os.environ.get("RANK", "0") or 0)
        return process_path(Path(args.output_dir) / self.file_name, rank, world_size(), False)

    def on_log(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        table().write(self.path(args))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        table().write(self.path(args))

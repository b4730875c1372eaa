"""The curriculum's state in TRL's checkpoints, so ``resume_from_checkpoint`` continues it.

    from orsgen.runtime.checkpoint import CurriculumCheckpoint

    trainer = GRPOTrainer(..., environment_factory=partial(Env, curriculum="pass_rate"),
                          callbacks=[CurriculumCheckpoint()])
    trainer.train(resume_from_checkpoint=True)

With no argument the callback saves the one curriculum this process's adapters chose
tasks with, and a resume hands the saved state to the first stream that makes its
curriculum. With several curricula in one process (several adapter classes, servers or
splits choosing tasks), build one ``PassRateCurriculum()`` per stream and give the one to
save to both the adapter's ``curriculum=`` and ``CurriculumCheckpoint(curriculum)``.

Every save writes ``orsgen_curriculum.json`` into the checkpoint directory TRL just wrote
(``output_dir/checkpoint-<step>``, transformers' ``_save_checkpoint``). Under several
processes the ranks first share the step's outcomes (a collective: every rank saves), so
they hold the same state, and only the main process writes it. A run that starts at a
saved step (a resumed run: transformers restores ``state.global_step`` before
``on_train_begin``) loads that file back before the first reset chooses a task.

A transformers callback by shape, not by import: ``CallbackHandler.call_event`` calls
``getattr(callback, event)(args, state, control, **kwargs)`` for every event, and every
event this class does not handle is a no-op (as in ``TrainerCallback``).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orsgen.runtime.rollouts import tasks
from orsgen.runtime.rollouts.curriculum import PassRateCurriculum

FILE = "orsgen_curriculum.json"
CHECKPOINT = "checkpoint"  # transformers' PREFIX_CHECKPOINT_DIR

logger = logging.getLogger("orsgen.runtime")


def path(output_dir: str | os.PathLike[str], step: int) -> Path:
    """Where the curriculum of the checkpoint at ``step`` is saved."""
    return Path(output_dir) / f"{CHECKPOINT}-{step}" / FILE


def _nothing(*_: Any, **__: Any) -> None:
    return None


class CurriculumCheckpoint:
    """Saves the curriculum's state with each checkpoint and restores it on resume:
    ``curriculum``, or (``None``) the one this process's adapters made."""

    def __init__(self, curriculum: PassRateCurriculum | None = None) -> None:
        self.curriculum = curriculum
        self.restored_from: Path | None = None
        self._warned = False

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("on_"):  # every other trainer event: nothing to do
            return _nothing
        raise AttributeError(name)

    def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        step = int(getattr(state, "global_step", 0) or 0)
        if step <= 0:
            return
        saved = path(args.output_dir, step)
        if not saved.is_file():
            raise FileNotFoundError(
                f"resuming at step {step}, but {saved} holds no curriculum state: the run "
                "was saved without CurriculumCheckpoint, or from another output_dir"
            )
        state_dict = json.loads(saved.read_text())
        target = self.curriculum
        if target is None:
            target = self._only(self._choosers(), "restore")
        if target is not None:
            target.load_state_dict(state_dict)
        else:  # no stream yet: the first one made with curriculum="pass_rate" continues
            PassRateCurriculum().load_state_dict(state_dict)  # refuse a bad file now
            tasks.samplers().resume(state_dict)
        self.restored_from = saved

    def on_save(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        # Every rank saves (transformers calls on_save everywhere): the outcomes of this
        # step's generation are shared first, so the state saved is every rank's.
        choosers = self._choosers()
        for chooser in choosers:
            chooser.synchronize()
        if not getattr(state, "is_world_process_zero", True):
            return
        curriculum = self.curriculum
        if curriculum is None:
            curriculum = self._only(choosers, "save")
        if curriculum is None:
            if not self._warned:
                self._warned = True
                logger.warning(
                    "CurriculumCheckpoint: no adapter in this process chose tasks with a "
                    "curriculum (curriculum='pass_rate' and train_dataset=None), so no "
                    "curriculum state is saved with the checkpoints"
                )
            return
        target = path(args.output_dir, int(state.global_step))
        target.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(curriculum.state_dict(), sort_keys=True)
        temporary = target.with_suffix(".tmp")
        temporary.write_text(text)
        temporary.replace(target)  # never a half-written state beside a whole checkpoint

    def _choosers(self) -> list[tasks.Chooser]:
        """This process's streams whose curriculum this callback saves."""
        return [
            sampler
            for sampler in tasks.samplers().all()
            if isinstance(sampler, tasks.Chooser)
            and sampler.curriculum is not None
            and (self.curriculum is None or sampler.curriculum is self.curriculum)
        ]

    @staticmethod
    def _only(choosers: list[tasks.Chooser], doing: str) -> PassRateCurriculum | None:
        found = {id(c.curriculum): c.curriculum for c in choosers if c.curriculum is not None}
        if len(found) > 1:
            raise ValueError(
                f"CurriculumCheckpoint() cannot tell which curriculum to {doing}: this "
                f"process chooses tasks with {len(found)} (one per adapter class, server and "
                "split); build a PassRateCurriculum() and pass it to the adapter's "
                "curriculum= and to CurriculumCheckpoint(curriculum)"
            )
        return next(iter(found.values()), None)

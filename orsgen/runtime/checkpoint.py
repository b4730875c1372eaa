"""The curriculum's state in TRL's checkpoints, so ``resume_from_checkpoint`` continues it.

    from orsgen.runtime.checkpoint import CurriculumCheckpoint
    from orsgen.runtime.rollouts.curriculum import PassRateCurriculum

    curriculum = PassRateCurriculum()
    trainer = GRPOTrainer(..., environment_factory=partial(Env, curriculum=curriculum),
                          callbacks=[CurriculumCheckpoint(curriculum)])
    trainer.train(resume_from_checkpoint=True)

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
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orsgen.runtime.rollouts import tasks
from orsgen.runtime.rollouts.curriculum import PassRateCurriculum

FILE = "orsgen_curriculum.json"
CHECKPOINT = "checkpoint"  # transformers' PREFIX_CHECKPOINT_DIR


def path(output_dir: str | os.PathLike[str], step: int) -> Path:
    """Where the curriculum of the checkpoint at ``step`` is saved."""
    return Path(output_dir) / f"{CHECKPOINT}-{step}" / FILE


def _nothing(*_: Any, **__: Any) -> None:
    return None


class CurriculumCheckpoint:
    """Saves ``curriculum``'s state with each checkpoint and restores it on resume."""

    def __init__(self, curriculum: PassRateCurriculum) -> None:
        self.curriculum = curriculum
        self.restored_from: Path | None = None

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
        self.curriculum.load_state_dict(json.loads(saved.read_text()))
        self.restored_from = saved

    def on_save(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        # Every rank saves (transformers calls on_save everywhere): the outcomes of this
        # step's generation are shared first, so the state saved is every rank's.
        for sampler in tasks.samplers().all():
            if isinstance(sampler, tasks.Chooser) and sampler.curriculum is self.curriculum:
                sampler.synchronize()
        if not getattr(state, "is_world_process_zero", True):
            return
        target = path(args.output_dir, int(state.global_step))
        target.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.curriculum.state_dict(), sort_keys=True)
        temporary = target.with_suffix(".tmp")
        temporary.write_text(text)
        temporary.replace(target)  # never a half-written state beside a whole checkpoint

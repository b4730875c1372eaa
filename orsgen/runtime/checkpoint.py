"""Task choice in TRL's checkpoints, so ``resume_from_checkpoint`` continues it.

    from orsgen import CurriculumCheckpoint

    trainer = GRPOTrainer(..., environment_factory=partial(Env, curriculum="pass_rate"),
                          callbacks=[CurriculumCheckpoint()])
    trainer.train(resume_from_checkpoint=True)

The resume protocol (:mod:`orsgen.runtime.rollouts.streams`): every save writes
``orsgen_curriculum.json`` into the checkpoint directory TRL just wrote
(``output_dir/checkpoint-<step>``, transformers' ``_save_checkpoint``) with the
``state_dict()`` of every task-sampler stream of the process, each under its key (adapter
class, server, split): a curriculum's pools and plan, and the uniform passes' position
alike. A run that starts at a saved step (a resumed run: transformers restores
``state.global_step`` before ``on_train_begin``) stages those states by key before the
first reset, and each stream continues from the state saved under its own key.
``CurriculumCheckpoint(curriculum)`` also restores that ``PassRateCurriculum`` object at
once, from the one saved stream that has a curriculum.

Under several processes the ranks first share the step's outcomes (a collective: every
rank saves), so they hold the same state, and only the world's process zero writes it
(:func:`orsgen.runtime.transport.identity.identity`).

Under ``AsyncGRPOTrainer`` the tasks are chosen in the rollout worker's own process, which
the trainer's checkpoints never reach: the callback refuses to be used there, when the
trainer is constructed, rather than save a state that cannot resume.

A transformers callback by shape, not by import: ``CallbackHandler.call_event`` calls
``getattr(callback, event)(args, state, control, **kwargs)`` for every event, and every
event this class does not handle is a no-op (as in ``TrainerCallback``).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from orsgen.runtime.rollouts import tasks
from orsgen.runtime.rollouts.curriculum import PassRateCurriculum
from orsgen.runtime.rollouts.streams import StreamKey
from orsgen.runtime.transport.identity import identity

FILE = "orsgen_curriculum.json"
CHECKPOINT = "checkpoint"  # transformers' PREFIX_CHECKPOINT_DIR
FORMAT = 2  # streams keyed by (class, server, split); 1 was one curriculum's state

logger = logging.getLogger("orsgen.runtime")


def path(output_dir: str | os.PathLike[str], step: int) -> Path:
    """Where the task choice of the checkpoint at ``step`` is saved."""
    return Path(output_dir) / f"{CHECKPOINT}-{step}" / FILE


def streams_of(saved: Mapping[str, Any]) -> list[tuple[StreamKey, Mapping[str, Any]]]:
    """The (key, state) of every stream a saved file holds."""
    if saved.get("format") != FORMAT:
        raise ValueError(
            f"{FILE} of format {saved.get('format', 1)!r}, not {FORMAT}: saved by an older "
            "orsgen (one curriculum's state, no stream keys); resume it with the orsgen "
            "that saved it"
        )
    return [(StreamKey.from_json(s["stream"]), s["state"]) for s in saved["streams"]]


def _nothing(*_: Any, **__: Any) -> None:
    return None


class CurriculumCheckpoint:
    """Saves every task-sampler stream's state with each checkpoint and restores each by
    its key on resume; ``curriculum``, when given, is restored at once too."""

    def __init__(self, curriculum: PassRateCurriculum | None = None) -> None:
        self.curriculum = curriculum
        self.restored_from: Path | None = None
        self._warned = False

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("on_"):  # every other trainer event: nothing to do
            return _nothing
        raise AttributeError(name)

    @staticmethod
    def _refuse_async(args: Any) -> None:
        if type(args).__name__.startswith("AsyncGRPO"):
            raise ValueError(
                "CurriculumCheckpoint cannot save the task choice of AsyncGRPOTrainer: its "
                "adapters choose tasks in the rollout worker's process, which the trainer's "
                "checkpoints do not reach, so a resume could not continue it. Remove the "
                "callback (a resumed run then starts its task choice afresh) or train with "
                "GRPOTrainer"
            )

    def on_init_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        self._refuse_async(args)  # transformers' Trainer.__init__ ends with this event

    def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        self._refuse_async(args)
        step = int(getattr(state, "global_step", 0) or 0)
        if step <= 0:
            return
        saved = path(args.output_dir, step)
        if not saved.is_file():
            raise FileNotFoundError(
                f"resuming at step {step}, but {saved} holds no task-choice state: the run "
                "was saved without CurriculumCheckpoint, or from another output_dir"
            )
        streams = streams_of(json.loads(saved.read_text()))
        if self.curriculum is not None:
            with_one = [s["curriculum"] for _, s in streams if "curriculum" in s]
            if len(with_one) != 1:
                raise ValueError(
                    f"{saved} holds {len(with_one)} curricula: CurriculumCheckpoint("
                    "curriculum) restores the one curriculum of the run"
                )
            self.curriculum.load_state_dict(with_one[0])
        tasks.samplers().stage(streams)
        self.restored_from = saved

    def on_save(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        # Every rank saves (transformers calls on_save everywhere): the outcomes of this
        # step's generation are shared first, so the state saved is every rank's.
        for sampler in tasks.samplers().all():
            if isinstance(sampler, tasks.Chooser):
                sampler.synchronize()
        if not identity().is_main:
            return
        streams = tasks.samplers().saved()
        if not streams and not self._warned:
            self._warned = True
            logger.warning(
                "CurriculumCheckpoint: no adapter in this process chose tasks "
                "(train_dataset=None), so the checkpoints hold no task-choice state"
            )
        target = path(args.output_dir, int(state.global_step))
        target.parent.mkdir(parents=True, exist_ok=True)
        body = {
            "format": FORMAT,
            "streams": [{"stream": k.to_json(), "state": s} for k, s in streams],
        }
        temporary = target.with_suffix(".tmp")
        temporary.write_text(json.dumps(body, sort_keys=True))
        temporary.replace(target)  # never a half-written state beside a whole checkpoint

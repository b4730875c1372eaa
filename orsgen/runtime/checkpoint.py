"""Task choice in TRL's checkpoints, so ``resume_from_checkpoint`` continues it.

    from orsgen import CurriculumCheckpoint

    trainer = GRPOTrainer(..., environment_factory=partial(Env, curriculum="pass_rate"),
                          callbacks=[CurriculumCheckpoint()])
    trainer.train(resume_from_checkpoint=True)

The resume protocol (:mod:`orsgen.runtime.choosing.streams`): every save writes
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

Under ``AsyncGRPOTrainer`` the tasks are chosen in the rollout worker, a child the trainer
spawns after this callback's ``on_train_begin``: the callback names a hand-off there
(:mod:`orsgen.runtime.choosing.handoff`, in the environment the child inherits), the worker
writes its streams' states under ``output_dir/.orsgen_task_state/`` and, on resume, stages
the checkpoint's file before its first stream. Each save copies the worker's latest
states into the checkpoint, so they are at most ``handoff.WRITE_EVERY`` (1 s; longer for a
catalog-sized state, see ``handoff.PACE``) behind the worker, which is itself ahead of the
trainer (it holds the outcomes of rollouts still queued). Before the worker wrote anything the save says so and writes a file with no
stream: a resume from it starts the task choice afresh, as it says.

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

from orsgen.runtime.choosing import handoff, tasks
from orsgen.runtime.choosing.curriculum import PassRateCurriculum
from orsgen.runtime.choosing.handoff import FORMAT as FORMAT
from orsgen.runtime.choosing.handoff import Handoff
from orsgen.runtime.choosing.handoff import streams_of as streams_of
from orsgen.runtime.choosing.streams import StreamKey
from orsgen.runtime.transport.identity import identity

FILE = "orsgen_curriculum.json"
CHECKPOINT = "checkpoint"  # transformers' PREFIX_CHECKPOINT_DIR

logger = logging.getLogger("orsgen.runtime")


def path(output_dir: str | os.PathLike[str], step: int) -> Path:
    """Where the task choice of the checkpoint at ``step`` is saved."""
    return Path(output_dir) / f"{CHECKPOINT}-{step}" / FILE


def _is_async(args: Any) -> bool:
    return type(args).__name__.startswith("AsyncGRPO")


def _nothing(*_: Any, **__: Any) -> None:
    return None


class CurriculumCheckpoint:
    """Saves every task-sampler stream's state with each checkpoint and restores each by
    its key on resume; ``curriculum``, when given, is restored at once too."""

    def __init__(self, curriculum: PassRateCurriculum | None = None) -> None:
        self.curriculum = curriculum
        self.restored_from: Path | None = None
        self.handoff: Handoff | None = None  # AsyncGRPO: where its rollout worker writes
        self._warned = False

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("on_"):  # every other trainer event: nothing to do
            return _nothing
        raise AttributeError(name)

    def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        step = int(getattr(state, "global_step", 0) or 0)
        saved = path(args.output_dir, step) if step > 0 else None
        streams: list[tuple[StreamKey, Mapping[str, Any]]] = []
        if saved is not None:
            if not saved.is_file():
                raise FileNotFoundError(
                    f"resuming at step {step}, but {saved} holds no task-choice state: the run "
                    "was saved without CurriculumCheckpoint, or from another output_dir"
                )
            streams = streams_of(json.loads(saved.read_text()))
            if not streams:
                logger.warning(
                    "CurriculumCheckpoint: %s holds no task-choice stream, so the task choice "
                    "starts afresh",
                    saved,
                )
        if self.curriculum is not None and saved is not None:
            with_one = [s["curriculum"] for _, s in streams if "curriculum" in s]
            if len(with_one) != 1:
                raise ValueError(
                    f"{saved} holds {len(with_one)} curricula: CurriculumCheckpoint("
                    "curriculum) restores the one curriculum of the run"
                )
            # Under AsyncGRPO too: the worker gets the factory, and this object, pickled later.
            self.curriculum.load_state_dict(with_one[0])
        if _is_async(args):
            self._hand_off(Path(args.output_dir), saved)
        elif saved is not None:
            tasks.samplers().stage(streams)
        self.restored_from = saved

    def _hand_off(self, output_dir: Path, resume: Path | None) -> None:
        """Name the worker's hand-off in the environment it inherits (it is spawned after
        this event), with no state of an earlier run left in its directory."""
        self.handoff = Handoff(output_dir / handoff.DIRECTORY, resume, os.getpid())
        self.handoff.latest.unlink(missing_ok=True)
        os.environ[handoff.ENV] = self.handoff.to_env()

    def on_train_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if self.handoff is not None:  # the worker is stopped: no later child inherits it
            os.environ.pop(handoff.ENV, None)

    def on_save(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        target = path(args.output_dir, int(state.global_step))
        if self.handoff is not None:
            if identity().is_main:
                self._save_worker(self.handoff, target)
            return
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
        handoff.write(target, json.dumps(handoff.body(streams), sort_keys=True))

    def _save_worker(self, worker: Handoff, target: Path) -> None:
        """The rollout worker's latest states, checked whole, into the checkpoint."""
        try:
            text = worker.latest.read_text()
        except FileNotFoundError:
            logger.warning(
                "CurriculumCheckpoint: the AsyncGRPO rollout worker has written no task-choice "
                "state yet (it writes within %.0f s of its first reset, when the callback was "
                "given to the trainer's callbacks=), so %s holds no stream and a resume from "
                "it starts the task choice afresh",
                handoff.WRITE_EVERY,
                target.parent,
            )
            text = json.dumps(handoff.body([]), sort_keys=True)
        streams_of(json.loads(text))  # never a file the resume cannot read
        handoff.write(target, text)

"""Task choice in TRL's checkpoints, so ``resume_from_checkpoint`` continues it.

    from orsgen import CurriculumCheckpoint

    trainer = GRPOTrainer(..., environment_factory=partial(Env, curriculum="pass_rate"),
                          callbacks=[CurriculumCheckpoint()])
    trainer.train(resume_from_checkpoint=True)

The resume protocol (:mod:`orsgen.runtime.choosing.streams`): every save writes
``orsgen_curriculum.json`` into the checkpoint directory TRL just wrote
(``output_dir/checkpoint-<step>``, transformers' ``_save_checkpoint``). The file (format
2, :func:`body`) holds the ``state_dict()`` of every task-sampler stream of the process,
each under its key (adapter class, server, split): a curriculum's pools and plan, and the
uniform passes' position alike. A run that starts at a saved step (a resumed run:
transformers restores ``state.global_step`` before ``on_train_begin``) stages those states
by key before the first reset, and each stream loads the state saved under its own key
once, when it is made: the one restore path, a ``PassRateCurriculum`` object shared by the
adapters included (``CurriculumCheckpoint(curriculum)`` only checks that the checkpoint
holds one curriculum).

Under several processes the ranks first share the step's outcomes (a collective: every
rank saves), so they hold the same state, and only the world's process zero writes it
(:func:`orsgen.runtime.transport.identity.identity`).

Under ``AsyncGRPOTrainer`` the rollout worker chooses and writes its states under
``output_dir/.orsgen_task_state/`` (:mod:`orsgen.runtime.choosing.handoff`); each save
copies its latest into the checkpoint, or, before it wrote any, a file with no stream (a
resume from it starts the task choice afresh, as the save says).

A transformers callback by shape, not by import: ``CallbackHandler.call_event`` calls
``getattr(callback, event)(args, state, control, **kwargs)`` for every event, and every
event this class does not handle is a no-op (as in ``TrainerCallback``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from orsgen.runtime.choosing.chooser import Chooser
from orsgen.runtime.choosing.curriculum import PassRateCurriculum
from orsgen.runtime.choosing.streams import StreamKey, samplers
from orsgen.runtime.rundir import write_whole
from orsgen.runtime.transport.identity import identity

FILE = "orsgen_curriculum.json"
CHECKPOINT = "checkpoint"  # transformers' PREFIX_CHECKPOINT_DIR
FORMAT = 2  # streams keyed by (class, server, split); 1 was one curriculum's state
ENV = "ORSGEN_TASK_STATE"  # names the hand-off to AsyncGRPO's rollout worker
DIRECTORY = ".orsgen_task_state"  # under output_dir: the worker's file
LATEST = "streams.json"

logger = logging.getLogger("orsgen.runtime")

Streams = Sequence[tuple[StreamKey, Mapping[str, Any]]]


def body(streams: Streams) -> dict[str, Any]:
    """The file's content for these streams."""
    return {"format": FORMAT, "streams": [{"stream": k.to_json(), "state": s} for k, s in streams]}


def streams_of(saved: Mapping[str, Any]) -> list[tuple[StreamKey, Mapping[str, Any]]]:
    """The (key, state) of every stream a saved file holds."""
    if saved.get("format") != FORMAT:
        raise ValueError(
            f"a task-choice state of format {saved.get('format', 1)!r}, not {FORMAT}: saved by "
            "an older orsgen (one curriculum's state, no stream keys); resume it with the "
            "orsgen that saved it"
        )
    return [(StreamKey.from_json(s["stream"]), s["state"]) for s in saved["streams"]]


@dataclasses.dataclass(frozen=True)
class Handoff:
    """Where AsyncGRPO's rollout worker writes its streams' states, what it resumes from,
    and the trainer's process (which never writes: it checkpoints)."""

    directory: Path
    resume: Path | None
    trainer: int

    @property
    def latest(self) -> Path:
        return self.directory / LATEST

    def to_env(self) -> str:
        return json.dumps(dataclasses.asdict(self), default=str)  # the paths as text

    @staticmethod
    def from_env() -> Handoff | None:
        raw = os.environ.get(ENV)
        if not raw:
            return None
        value = json.loads(raw)
        resume = value["resume"]
        return Handoff(Path(value["directory"]), resume and Path(resume), int(value["trainer"]))


def path(output_dir: str | os.PathLike[str], step: int) -> Path:
    """Where the task choice of the checkpoint at ``step`` is saved."""
    return Path(output_dir) / f"{CHECKPOINT}-{step}" / FILE


def _nothing(*_: Any, **__: Any) -> None:
    return None


def _worker_states(worker: Handoff, target: Path) -> str:
    try:
        return worker.latest.read_text()
    except FileNotFoundError:
        logger.warning(
            "CurriculumCheckpoint: the AsyncGRPO rollout worker has written no task-choice "
            "state yet (it writes at its first reset, when the callback was given to the "
            "trainer's callbacks=), so %s holds no stream and a resume from it starts the "
            "task choice afresh",
            target.parent,
        )
        return json.dumps(body([]), sort_keys=True)


class CurriculumCheckpoint:
    """Saves every task-sampler stream's state with each checkpoint and restores each by
    its key on resume. ``curriculum`` (the run's one ``PassRateCurriculum``, optional): a
    resume checks that the checkpoint holds one curriculum, which its stream restores."""

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
            curricula = sum("curriculum" in state for _, state in streams)
            if self.curriculum is not None and curricula != 1:
                raise ValueError(
                    f"{saved} holds {curricula} curricula: CurriculumCheckpoint(curriculum) "
                    "resumes the one curriculum of the run"
                )
        if type(args).__name__.startswith("AsyncGRPO"):
            # Named in the environment the worker inherits (it is spawned after this event),
            # with no state of an earlier run left in its directory.
            self.handoff = Handoff(Path(args.output_dir) / DIRECTORY, saved, os.getpid())
            self.handoff.latest.unlink(missing_ok=True)
            os.environ[ENV] = self.handoff.to_env()
        elif saved is not None:
            samplers().stage(streams)
        self.restored_from = saved

    def on_train_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if self.handoff is not None:  # the worker is stopped: no later child inherits it
            os.environ.pop(ENV, None)

    def on_save(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        target = path(args.output_dir, int(state.global_step))
        if self.handoff is not None:  # the rollout worker's latest, checked whole
            if identity().is_main:
                text = _worker_states(self.handoff, target)
                streams_of(json.loads(text))  # never a file the resume cannot read
                write_whole(target, text)
            return
        # Every rank saves (transformers calls on_save everywhere): the outcomes of this
        # step's generation are shared first, so the state saved is every rank's.
        for sampler in samplers().all():
            if isinstance(sampler, Chooser):
                sampler.synchronize()
        if not identity().is_main:
            return
        streams = samplers().saved()
        if not streams and not self._warned:
            self._warned = True
            logger.warning(
                "CurriculumCheckpoint: no adapter in this process chose tasks "
                "(train_dataset=None), so the checkpoints hold no task-choice state"
            )
        write_whole(target, json.dumps(body(streams), sort_keys=True))

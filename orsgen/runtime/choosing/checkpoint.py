"""Task choice in TRL's checkpoints, so ``resume_from_checkpoint`` continues it (the protocol:
:mod:`orsgen.runtime.choosing.streams`; for users: docs/curriculum.md, "Resuming").

Each save writes ``orsgen_curriculum.json`` (:func:`body`) into the directory transformers'
``_save_checkpoint`` just wrote; a resume (``state.global_step`` is restored before
``on_train_begin``) stages its states before the first reset. Under ``AsyncGRPOTrainer`` the
tasks are chosen in the rollout worker, spawned at ``on_train_begin`` after the given callbacks
with ``os.environ`` as it is then, so the callback names a :class:`Handoff` in
``ORSGEN_TASK_STATE``: the worker (:func:`join`) stages the resume file and writes its states to
``output_dir/.orsgen_task_state/streams.json``, which each save copies.

A transformers callback by shape, not by import: ``CallbackHandler.call_event`` calls
``getattr(callback, event)(args, state, control, **kwargs)``, and every event this class does
not handle is a no-op (as in ``TrainerCallback``).
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from orsgen.runtime.choosing.chooser import Chooser
from orsgen.runtime.choosing.curriculum import PassRateCurriculum
from orsgen.runtime.choosing.streams import StreamKey, samplers
from orsgen.rundir import write_whole as write
from orsgen.runtime.transport.identity import identity
from orsgen.runtime.transport.process import current

FILE = "orsgen_curriculum.json"
CHECKPOINT = "checkpoint"  # transformers' PREFIX_CHECKPOINT_DIR
FORMAT = 2  # streams keyed by (class, server, split); 1 was one curriculum's state
ENV = "ORSGEN_TASK_STATE"  # names the hand-off to AsyncGRPO's rollout worker
DIRECTORY = ".orsgen_task_state"  # under output_dir: the worker's file
LATEST = "streams.json"
WRITE_EVERY = 1.0  # seconds: the worker's file lags its streams by at most this (and a write)
# A write costs O(tasks) (about 0.3 s at 100,000 tasks here): the writer waits at least this
# many times its last write's cost, so it never takes more than a tenth of a core.
PACE = 9.0

logger = logging.getLogger("orsgen.runtime")

Streams = Sequence[tuple[StreamKey, Mapping[str, Any]]]


def body(streams: Streams) -> dict[str, Any]:
    return {"format": FORMAT, "streams": [{"stream": k.to_json(), "state": s} for k, s in streams]}


def streams_of(saved: Mapping[str, Any]) -> list[tuple[StreamKey, Mapping[str, Any]]]:
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
    return Path(output_dir) / f"{CHECKPOINT}-{step}" / FILE


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
            return lambda *_, **__: None
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
                try:
                    text = self.handoff.latest.read_text()
                except FileNotFoundError:
                    logger.warning(
                        "CurriculumCheckpoint: the AsyncGRPO rollout worker has written no "
                        "task-choice state yet (it writes at its first reset, when the callback "
                        "was given to the trainer's callbacks=), so %s holds no stream and a "
                        "resume from it starts the task choice afresh",
                        target.parent,
                    )
                    text = json.dumps(body([]), sort_keys=True)
                streams_of(json.loads(text))  # never a file the resume cannot read
                write(target, text)
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
        write(target, json.dumps(body(streams), sort_keys=True))


class _Worker:
    """This process's part in a hand-off (none when it is not a worker under one)."""

    def __init__(self) -> None:
        self.handoff = Handoff.from_env()
        self._lock = threading.Lock()
        self.wake = threading.Event()
        self._written = ""
        self._changes = -1  # samplers().changes() at the last write
        self._cost = 0.0  # seconds the last write took
        self._failed = False
        if self.handoff is None or self.handoff.trainer != os.getppid():
            self.handoff = None  # the trainer itself, or not its child: not the worker
            return
        if self.handoff.resume is not None:  # before any stream is made: each takes its own
            samplers().stage(streams_of(json.loads(self.handoff.resume.read_text())))
        threading.Thread(target=self._run, name="orsgen-task-state", daemon=True).start()
        atexit.register(self.flush)  # the last state, when the worker exits cleanly

    def _run(self) -> None:
        while True:
            self.wake.wait(max(WRITE_EVERY, PACE * self._cost))
            self.wake.clear()
            if samplers().changes() == self._changes:
                continue  # idle: no choice or outcome since the last write
            try:
                self.flush()
            except Exception:  # noqa: BLE001 - the writer must outlive a failed write
                if not self._failed:  # once: the same cause would fail every period
                    self._failed = True
                    logger.exception("the rollout worker could not write its task-choice state")

    def flush(self) -> None:
        """Write the streams' states when they changed (never a file with no stream)."""
        if self.handoff is None:
            return
        with self._lock:
            changes = samplers().changes()  # before the states: a later change writes again
            started = time.monotonic()
            streams = samplers().saved()
            if not streams:
                return
            text = json.dumps(body(streams), sort_keys=True)
            if text != self._written:
                write(self.handoff.latest, text)
                self._written = text
            self._changes, self._cost = changes, time.monotonic() - started


def join() -> None:
    """Take part in the hand-off named in the environment, if this process is its worker (once)."""
    current().part(_Worker)


def made() -> None:
    """A stream was made: write the states now, not a period later."""
    current().part(_Worker).wake.set()


def flush() -> None:
    """Write the worker's states now, when they changed (as at exit)."""
    current().part(_Worker).flush()

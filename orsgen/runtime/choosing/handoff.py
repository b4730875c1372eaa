"""AsyncGRPO's rollout worker, which chooses tasks, hands its streams' states to the
trainer, which checkpoints them (the file format and ``Handoff``: :mod:`.checkpoint`).

The worker is a child the trainer spawns at ``on_train_begin`` (``AsyncRolloutWorker.start()``,
run by TRL's ``_TrainBeginCallback`` after the given callbacks) and inherits ``os.environ``
as it is then, so the trainer's callback names a ``Handoff`` in ``ORSGEN_TASK_STATE`` first.
A child of the trainer that makes a stream under it (the worker) then

- stages the resume file's states before its first stream is made, so each stream
  continues from the state saved under its key;
- writes its streams' states to ``directory/streams.json`` (a temporary file, then a
  rename: never half-written) at once when a stream is made, then every
  :data:`WRITE_EVERY` seconds when a sampler chose or observed since the last write (an
  idle worker serialises nothing), and at exit. A write of a catalog-sized state costs
  O(tasks), so the period stretches to :data:`PACE` times the last write's cost when
  that is longer (about 3 s at 100,000 tasks on a 2-core machine).

A file that exists always resumes. The worker is ahead of the trainer anyway (up to
``max_inflight_tasks`` in flight and ``queue_maxsize`` queued): a resume continues after
those rollouts, it does not choose them again.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time

from orsgen.runtime.choosing.checkpoint import Handoff, body, streams_of
from orsgen.runtime.choosing.streams import samplers
from orsgen.runtime.rundir import write_whole as write
from orsgen.runtime.transport.process import current

WRITE_EVERY = 1.0  # seconds: the worker's file lags its streams by at most this (and a write)
# A write costs O(tasks) (about 0.3 s at 100,000 tasks here): the writer waits at least this
# many times its last write's cost, so it never takes more than a tenth of a core.
PACE = 9.0

logger = logging.getLogger("orsgen.runtime")


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
        """Write the streams' states when they changed (never a file with no stream: the
        trainer says so instead)."""
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
    """Take part in the hand-off named in the environment, if this process is its worker
    (once per process; the adapter calls this before it makes a stream)."""
    current().part(_Worker)


def made() -> None:
    """A stream was made: write the states now, not a period later."""
    current().part(_Worker).wake.set()


def flush() -> None:
    """Write the worker's states now, when they changed (as at exit)."""
    current().part(_Worker).flush()

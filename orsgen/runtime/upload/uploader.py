"""Settled rollouts to OpenReward's runs UI through the SDK's public upload client
(``RolloutAPI.create()``, which blocks, and ``Rollout.log``), from at most :data:`THREADS`
daemon threads: a rollout is only enqueued. What an outage and the exit cost: docs/viewing.md.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import importlib.metadata
import logging
import multiprocessing.util
import os
import queue
import sys
import threading
import time
from collections.abc import Generator
from typing import Any

from orsgen.runtime.records import metrics
from orsgen.runtime.transport.process import at_shutdown, current
from orsgen.runtime.upload.record import Record, events

logger = logging.getLogger("orsgen.runtime.upload")

QUEUE_SIZE = 2048  # rollouts waiting for the uploader; more are dropped (and counted)
THREADS = 16  # rollouts started at once at most (each create() holds a thread until answered)
START_TIMEOUT = 5.0  # seconds a start may take before the API is taken to be down
EXIT_BUDGET = 5.0  # seconds the process's exit gives the uploads in all
DOWN_GRACE = 0.5  # seconds the exit gives the SDK's client when the API is known down
RETRY_FIRST, RETRY_MAX = 2.0, 60.0  # pause before a probe after a failed start
SHUTDOWN_ORDER = 40  # before the trajectory files (50); independent of sessions

_import_lock = threading.Lock()


def _sdk() -> Any:
    import openreward  # type: ignore[import-untyped]

    return openreward


class Uploader:
    """This process's uploads (a :meth:`Process.part`: a forked child has its own)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Record] = queue.Queue(maxsize=QUEUE_SIZE)
        self._lock = threading.Condition(threading.RLock())
        self._threads = 0
        self._idle = 0  # threads waiting for a rollout
        self._clients: dict[tuple[str, str | None], Any] = {}  # (key, url): a RolloutAPI
        self._starting: dict[int, float] = {}  # thread -> when its rollout's start was sent
        self._given_up: set[int] = set()  # threads whose start a flush counted as dropped
        self._answered = False  # the last start went through: starts need not wait their turn
        self._outage: str | None = None  # why uploads fail, while they do
        self.failure: str | None = None  # why the last outage began (kept after it ended)
        self._retry_at = 0.0
        self._pause = RETRY_FIRST
        self._flushing = False
        self._dropped = 0  # since the last metrics drain
        self.trainer: dict[str, Any] | None = None  # RunInfo fields the trainer gave
        self.uploaded = 0
        self.dropped_total = 0
        self.exited = False  # the exit's flush ran
        metrics.source(self.drain_metric)

    def submit(self, record: Record) -> None:
        """Queue ``record`` for upload, never waiting; a full queue drops it (counted)."""
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self._drop(f"the upload queue is full ({QUEUE_SIZE} rollouts waiting)")
            return
        with self._lock:  # a thread for each rollout waiting, up to THREADS
            if self._queue.qsize() > self._idle and self._threads < THREADS:
                self._threads += 1
                threading.Thread(target=self._work, name="orsgen-upload", daemon=True).start()

    def warm(self) -> None:
        """Import the SDK's upload client now, in the thread that configures the adapter
        (the trainer's, before any rollout). Not from an uploader thread: its import of
        ``openreward`` could meet a rollout thread's import of an SDK submodule halfway,
        and Python then hands one of them a partially initialised module."""
        with _import_lock, contextlib.suppress(Exception):  # the first upload says what fails
            _sdk()

    def drain_metric(self) -> dict[str, float]:
        with self._lock:
            dropped, self._dropped = self._dropped, 0
        return {"ors/upload_dropped": float(dropped)}

    def _drop(self, why: str) -> None:
        with self._lock:
            self._dropped += 1
            self.dropped_total += 1
            self._outage_begins(why)

    def _outage_begins(self, why: str) -> None:
        """Say it once per outage: from the first drop until a start goes through."""
        with self._lock:
            if self._outage is not None:
                return
            self._outage = self.failure = why
        logger.warning(
            "uploading rollouts to the runs UI failed (%s); rollouts are dropped until it "
            "works again, counted in ors/upload_dropped, and training goes on",
            why,
        )

    @property
    def down(self) -> bool:
        """Whether the API is known to be down (a start failed, no probe went through since)."""
        return self._outage is not None and not self._answered

    def _work(self) -> None:
        me = threading.get_ident()
        while True:
            with self._lock:
                self._idle += 1
            record = self._queue.get()
            with self._lock:
                self._idle -= 1
            try:
                self._upload(me, record)
            finally:
                with self._lock:
                    self._given_up.discard(me)
                    self._queue.task_done()
                    self._lock.notify_all()

    def _upload(self, me: int, record: Record) -> None:
        why = self._admit(me)
        if why is not None:
            self._drop(why)
            return
        try:
            failure = self._start(record)
        except Exception as exc:  # noqa: BLE001 - an upload never ends the thread
            failure = f"{type(exc).__name__}: {str(exc)[:200]}"
        with self._lock:
            del self._starting[me]
            counted = me not in self._given_up
            if failure is not None:
                self._failed()
                if counted:
                    self._drop(failure)
            else:
                self._answered, self._pause = True, RETRY_FIRST
                self.uploaded += int(counted)
                if self._outage is not None:
                    self._outage = None
                    logger.warning("uploading rollouts to the runs UI works again")

    def _admit(self, me: int) -> str | None:
        """Wait for this thread's turn to start a rollout: ``None`` when it may, else why not."""
        with self._lock:
            while True:
                now = time.monotonic()
                self._check_stuck(now)
                if self._outage is not None and (self._flushing or now < self._retry_at):
                    if not self._answered:
                        return self._outage
                if self._answered or not self._starting:
                    self._starting[me] = now
                    self._lock.notify_all()  # a flush waits for it to answer in time
                    return None
                self._lock.wait(max(min(self._starting.values()) + START_TIMEOUT - now, 0.01))

    def _check_stuck(self, now: float) -> None:
        if self._starting and now - min(self._starting.values()) >= START_TIMEOUT:
            if self._answered or self._outage is None or now >= self._retry_at:
                self._failed()
                late = f"the platform API did not answer a rollout's start in {START_TIMEOUT:g} s"
                self._outage_begins(late)

    def _failed(self) -> None:
        """A start failed: probe again after a pause that grows with each failure."""
        self._answered = False
        self._retry_at = time.monotonic() + self._pause
        self._pause = min(self._pause * 2, RETRY_MAX)

    def _start(self, record: Record) -> str | None:
        """Start ``record``'s rollout and log its events (the reward and metadata on the
        last): ``None`` when it started, else why not."""
        sdk = _sdk()
        client = self._client(record)
        rollout = client.create(
            run_name=record.run.run_name,
            environment=record.environment,
            split=record.split,
            metadata=dict(record.metadata),
            task_spec=None if record.task_spec is None else dict(record.task_spec),
            run_info=self._run_info(record),
        )
        info = sdk.RolloutInfo(
            task_index=-1 if record.task_index is None else record.task_index,
            current_step=record.step,
            duration_ms=record.duration_ms,
            harness="orsgen",
        )
        found = events(record.messages) or [("user_message", {"content": "(no messages)"})]
        for number, (kind, fields) in enumerate(found):
            last = number == len(found) - 1
            rollout.log(
                getattr(sdk, kind.title().replace("_", ""))(**fields),  # user_message: UserMessage
                reward=record.reward if last else None,
                is_finished=record.finished if last else False,
                metadata=dict(record.metadata) if last else None,
                rollout_info=info if last else None,
            )
        if rollout.logged_messages:
            return None
        return f"the platform API at {client.send_loop_config.base_url} did not start a rollout"

    def _client(self, record: Record) -> Any:
        key = (record.api_key, record.api_url)
        with self._lock:
            found = self._clients.get(key)
            if found is None:
                client = _sdk().OpenReward(api_key=record.api_key or None)
                if record.api_url:  # else the SDK's choice, OPENREWARD_API_URL first
                    client.config.send_loop_config.base_url = record.api_url.rstrip("/")
                found = self._clients[key] = client.rollout
                # The exit's flush runs before the SDK client's own (atexit runs the last
                # registered first); AsyncGRPO's rollout worker ends in os._exit without
                # atexit handlers, and multiprocessing runs its exit finalizers there.
                atexit.register(_at_exit)
                multiprocessing.util.Finalize(None, _at_exit, exitpriority=100)
            return found

    def _run_info(self, record: Record) -> Any:
        fields: dict[str, Any] = dict(self.trainer or {})
        fields["training_stage"] = record.run.training_stage or fields.get("training_stage")
        if record.run.model_name is not None:
            fields["model_name"] = record.run.model_name
        fields.update(record.run.run_info)
        fields.setdefault("model_name", "unknown")
        run_info = _sdk().RunInfo
        known = {f.name for f in dataclasses.fields(run_info)}
        return run_info(**{k: v for k, v in fields.items() if k in known})

    def queued(self) -> int:
        """Rollouts not settled yet: waiting for an uploader thread, or in its hands."""
        with self._lock:
            return self._queue.unfinished_tasks - len(self._given_up)

    def flush(self, timeout: float) -> bool:
        """Upload what is queued, then close the SDK's clients, within ``timeout`` seconds in
        all; ``False`` when time ran out (what is left dies with the daemon threads)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._flushing = True
            try:
                done = self._settle(deadline)
                clients, self._clients = list(self._clients.values()), {}
            finally:
                self._flushing = False
            grace = DOWN_GRACE if self.down else timeout
        for client in clients:
            left = min(deadline - time.monotonic(), grace)
            client.shutdown_timeout = max(left, 0.01)
            client.close()  # its batches, sent by its own thread, waited for
        return done

    def _settle(self, deadline: float) -> bool:
        while True:
            now = time.monotonic()
            self._check_stuck(now)
            if self.down:
                self._give_up()
            if self.queued() == 0:
                return True
            if now >= deadline:
                return False
            waits = [deadline] + [since + START_TIMEOUT for since in self._starting.values()]
            self._lock.wait(max(min(waits) - now, 0.01))

    def _give_up(self) -> None:
        """With the API known down: drop what is queued, count what is starting as dropped."""
        why = self._outage or "the platform API is away"
        for thread in self._starting:
            if thread not in self._given_up:
                self._given_up.add(thread)
                self._drop(why)
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return
            self._drop(why)
            self._queue.task_done()


def uploader() -> Uploader:
    return current().part(Uploader)


@contextlib.contextmanager
def said_once(run_name: str) -> Generator[None, None, None]:
    """A command's run that uploads (``orsgen eval --upload-run``), said in one line at its
    end, with the uploader's lines held back and the SDK's quieted meanwhile (docs/viewing.md;
    the SDK reads ``OPENREWARD_LOG_LEVEL`` when it is imported)."""
    os.environ.setdefault("OPENREWARD_LOG_LEVEL", "ERROR")
    logger.addFilter(_held_back)
    try:
        yield
        up = uploader()
        left = "" if up.flush(EXIT_BUDGET) else f"; gave up waiting after {EXIT_BUDGET:g} s"
        up.drain_metric()  # counted in this line, not again by the exit's
    finally:
        logger.removeFilter(_held_back)
    why = f" ({up.failure})" if up.dropped_total and up.failure else ""
    print(
        f"runs UI: {up.uploaded} rollouts uploaded to run {run_name!r}, "
        f"{up.dropped_total} dropped{why}{left}",
        file=sys.stderr,
    )


def _held_back(_record: logging.LogRecord) -> bool:
    return False


def flush(timeout: float = EXIT_BUDGET) -> bool:
    """Wait (at most ``timeout`` s) until this process's queue is uploaded (also done at exit)."""
    return uploader().flush(timeout)


def _at_exit() -> None:
    """The exit's flush, once however many exit hooks call it."""
    up = uploader()
    if up.exited:
        return
    up.exited = True
    done = up.flush(EXIT_BUDGET)
    # Every drop no log got: the exit's, and those after the trainer's last metrics drain.
    lost = int(up.drain_metric()["ors/upload_dropped"]) + (0 if done else up.queued())
    if lost:
        why = "the API is down" if up.down else f"the exit's {EXIT_BUDGET:g} s ran out"
        logger.warning("at exit %d more rollouts were not uploaded to the runs UI (%s)", lost, why)


at_shutdown(SHUTDOWN_ORDER, lambda _process: _at_exit())


def trl_version() -> str | None:
    """TRL's installed version, read without importing it (0.3 s of CPU outside training)."""
    try:
        return importlib.metadata.version("trl")
    except Exception:  # noqa: BLE001 - no trl, no version
        return None

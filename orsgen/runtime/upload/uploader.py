"""The uploader behind :mod:`orsgen.runtime.upload` (rollouts in OpenReward's runs UI: opt-in with ``upload_run="NAME"`` (or an
:class:`~orsgen.runtime.upload.record.UploadRun`) on an adapter, or ``orsgen eval --upload-run NAME``.

Each settled rollout becomes one platform rollout: ``run_name``, the environment (its
catalog name when it has one), split, task index and task spec, every message the model
saw and sent (tool calls and results included), the reward and ``is_finished`` on the
last message, orsgen's verdict and reason as metadata, and a ``RunInfo`` from what the
process knows (the trainer's model, learning rate, batch size, step; ``trl`` and its
version). No secret, ``env_overrides`` value or API key is part of any of it; the key
authenticates the request as a header, the SDK's own way.

**Never in the way.** The SDK's ``rollout.create()`` blocks (a synchronous start request
without a timeout, retried on 5xx for about 15 s) and its ``log_openai_completions`` keeps
only the first event of a message. So a rollout is only *enqueued* here, on a bounded
queue, when it settles; one daemon thread per process (AsyncGRPO's rollout child and each
torchrun rank have their own) starts it on the platform and batches every event of every
message: the SDK's requests, sent over one kept-alive HTTP session
(:mod:`orsgen.runtime.upload.wire`). Start requests are :data:`START_SPACING`
seconds apart at least: the rollouts that settle meanwhile start in one request, each
acknowledged before any of its messages is sent. A full queue or an API that is down or
refusing drops the rollout: counted as ``ors/upload_dropped`` in the trainer's log and said
once per outage.

**An outage costs as little as it can.** A rollout's start is retried on a 5xx
:data:`START_RETRIES` times (0.5 + 1 s; the SDK's own four would take 7.5 s); once a start has
failed (refused, 5xx after those retries, 429), the API is known to be down: rollouts are
dropped at once, and after a pause that grows from :data:`RETRY_FIRST` to :data:`RETRY_MAX`
seconds one rollout is sent as a *probe*, a single request. A probe that goes through ends
the outage. A start is given up after ``START_TIMEOUT`` seconds in all, so an API that
accepts connections and never answers is an outage too. The batches of the rollouts that
started keep the SDK's retries. At exit the queue gets :data:`EXIT_BUDGET` seconds in all to
drain and flush; with the API known to be down, what is queued is dropped (counted) without
a request, and the batches get :data:`DOWN_GRACE` seconds.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.metadata
import logging
import multiprocessing.util
import queue
import threading
import time
from typing import Any

from orsgen.runtime.records import metrics
from orsgen.runtime.upload.record import Record
from orsgen.runtime.upload.wire import (
    BATCH_TIMEOUT,
    StartFailed,
    StartsOneByOne,
    Wire,
    start_fields,
)
from orsgen.runtime.transport.process import Process, at_shutdown, current

logger = logging.getLogger("orsgen.runtime")

QUEUE_SIZE = 2048  # rollouts waiting for the uploader; more are dropped (and counted)
EXIT_BUDGET = 5.0  # seconds the process's exit gives the uploads in all
DOWN_GRACE = 0.5  # seconds the exit gives the batches when the API is known down
RETRY_FIRST, RETRY_MAX = 2.0, 60.0  # pause before trying again after a failed start
START_RETRIES = 2  # a start's retries on a 5xx while the API is up (0.5 + 1 s); a probe has 0
START_SPACING = 0.1  # seconds between start requests at least (those waiting start together)
START_GROUP = 128  # rollouts started in one request at most (the SDK's max_batch_items)
SHUTDOWN_ORDER = 40  # before the trajectory files (50); independent of sessions


_import_lock = threading.Lock()


class Uploader:
    """This process's uploads (a :meth:`Process.part`: a forked child has its own)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Record | None] = queue.Queue(maxsize=QUEUE_SIZE)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._wires: dict[tuple[str, str | None], Wire] = {}  # (key, url): the thread's
        self._deadline = 0.0  # when the flush under way must be done
        self._last_start = 0.0  # when the last start request was sent
        self._dropped = 0  # since the last metrics drain
        self._outage: str | None = None  # why uploads fail, while they do
        self._retry_at = 0.0
        self._pause = RETRY_FIRST
        self.trainer: dict[str, Any] | None = None  # RunInfo fields the trainer gave
        self.uploaded = 0
        self.dropped_total = 0
        self.exited = False  # the exit's flush ran
        self._flushing = False  # a flush waits: with the API down, drop without probing
        self._busy = 0  # rollouts the thread holds (taken off the queue, not settled)
        metrics.source(self.drain_metric)

    # -- the rollout's side: enqueue only -------------------------------------------------

    def submit(self, record: Record) -> None:
        """Queue ``record`` for upload, never waiting; a full queue drops it (counted)."""
        self._start()
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self._drop(f"the upload queue is full ({QUEUE_SIZE} rollouts waiting)")

    def drain_metric(self) -> dict[str, float]:
        """``ors/upload_dropped`` since the last drain (the metrics', or the exit's)."""
        with self._lock:
            dropped, self._dropped = self._dropped, 0
        return {"ors/upload_dropped": float(dropped)}

    def _drop(self, why: str) -> None:
        with self._lock:
            self._dropped += 1
            self.dropped_total += 1
            first = self._outage is None
            if first:
                self._outage = why
        if first:
            logger.warning(
                "uploading rollouts to the runs UI failed (%s); rollouts are dropped until it "
                "works again, counted in ors/upload_dropped, and training goes on",
                why,
            )

    def _recovered(self) -> None:
        with self._lock:
            was, self._outage = self._outage, None
            self._pause = RETRY_FIRST
        if was is not None:
            logger.warning("uploading rollouts to the runs UI works again")

    # -- the uploader thread ---------------------------------------------------------------

    def _start(self) -> None:
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="orsgen-upload", daemon=True)
                self._thread.start()

    def warm(self) -> None:
        """Import the SDK's upload client now, in the thread that configures the adapter
        (the trainer's, before any rollout), then start the uploader thread. Not from the
        uploader thread: its import of ``openreward`` could meet a rollout thread's import
        of an SDK submodule halfway, and Python then hands one of them a partially
        initialised module (an ImportError in a reset)."""
        if self._thread is not None:
            return  # warmed already
        with _import_lock:
            try:
                # The runtime's own first SDK import, so two threads never enter it from
                # different submodules; the upload client loads with the package.
                importlib.import_module("openreward.api.environments.client")
                for name in ("openreward.http_client", "openreward.api.rollouts.background"):
                    importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the first upload says what is wrong
                pass
        self._start()

    def _run(self) -> None:
        while True:
            due = [d for w in self._wires.values() if (d := w.due_in()) is not None]
            try:
                first = self._queue.get(timeout=min(due) if due else None)
            except queue.Empty:  # a batch is max_age old
                self._send_due()
                continue
            self._busy = int(first is not None)
            group = self._take(first)
            records = [r for r in group if r is not None]
            self._busy = len(records)
            settled = self.uploaded + self.dropped_total
            try:
                for wire, mine in self._by_api(records):
                    self._upload(wire, mine)
                self._send_due()
            except Exception as exc:  # noqa: BLE001 - an upload never ends the thread
                for _ in range(len(records) - (self.uploaded + self.dropped_total - settled)):
                    self._drop(f"{type(exc).__name__}: {exc}")
            finally:
                self._busy = 0
                for _ in group:
                    self._queue.task_done()
            if group[-1] is None:
                self._close_wires()
                return

    def _take(self, first: Record | None) -> list[Record | None]:
        """``first`` and the rollouts queued behind it, to start in one request, up to
        :data:`START_GROUP` or a flush's end (``None``). Start requests are
        :data:`START_SPACING` seconds apart at least: after a quiet spell a rollout starts
        at once, in a steady stream those that settled meanwhile start together."""
        wait = self._last_start + START_SPACING - time.monotonic()
        if first is not None and wait > 0 and not self._flushing:
            time.sleep(wait)
        group = [first]
        while group[-1] is not None and len(group) < START_GROUP:
            try:
                group.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return group

    def _by_api(self, records: list[Record]) -> list[tuple[Wire, list[Record]]]:
        """``records`` in runs of the same API (nearly always one run)."""
        runs: list[tuple[Wire, list[Record]]] = []
        for record in records:
            wire = self._wire(record)
            if runs and runs[-1][0] is wire:
                runs[-1][1].append(record)
            else:
                runs.append((wire, [record]))
        return runs

    def _batch_time(self) -> float:
        """How long batches may take now: :data:`BATCH_TIMEOUT`, or within a flush what
        is left of it (:data:`DOWN_GRACE` at most with the API known down)."""
        if not self._flushing:
            return BATCH_TIMEOUT
        left = max(self._deadline - time.monotonic(), 0.0)
        return min(left, DOWN_GRACE) if self.down else min(left, BATCH_TIMEOUT)

    def _send_due(self) -> None:
        for wire in list(self._wires.values()):
            wire.send_due(self._batch_time())

    def _close_wires(self) -> None:
        wires, self._wires = list(self._wires.values()), {}
        for wire in wires:
            try:
                wire.close(self._batch_time())
            except Exception:  # noqa: BLE001 - closing is best effort
                pass

    @property
    def down(self) -> bool:
        """Whether the API is known to be down (a start failed, no probe went through since)."""
        return self._outage is not None

    def _upload(self, wire: Wire, records: list[Record]) -> None:
        outage = self._outage
        if outage is not None and (self._flushing or time.monotonic() < self._retry_at):
            for _ in records:
                self._drop(outage)  # known down: no request, no wait
            return
        if outage is not None:  # a probe: one rollout, one request
            if not self._begin(wire, records[:1], probe=True):
                for _ in records[1:]:
                    self._drop(outage)
                return
            records = records[1:]
        if records:
            self._begin(wire, records, probe=False)

    def _begin(self, wire: Wire, records: list[Record], probe: bool) -> bool:
        """Start ``records`` on the platform, then queue their events for the batches."""
        if wire.one_by_one and len(records) > 1:
            for number, record in enumerate(records):
                if not self._begin(wire, [record], probe):
                    for _ in records[number + 1 :]:
                        self._drop(self._outage or "the platform API is away")
                    return False
            return True
        self._last_start = time.monotonic()
        try:
            started = self._create(wire, records, probe)
        except StartsOneByOne:
            return self._begin(wire, records, probe)
        except StartFailed as exc:
            with self._lock:
                self._retry_at = time.monotonic() + self._pause
                self._pause = min(self._pause * 2, RETRY_MAX)
            for _ in records:
                self._drop(str(exc))
            return False
        self._recovered()
        for record, rollout in zip(records, started):
            rollout.log_record(record)
            self.uploaded += 1
        return True

    def _create(self, wire: Wire, records: list[Record], probe: bool) -> list[Any]:
        """The start events the SDK's ``create()`` sends, in one request, waited for, with
        :data:`START_RETRIES` retries on a 5xx, or none for a probe while the API is known
        down; :class:`StartFailed` when it does not go through."""
        retries = 0 if probe else min(START_RETRIES, wire.config.max_retries)
        starts = [start_fields(record, self._run_info(record)) for record in records]
        return list(wire.start(retries, starts))

    def _wire(self, record: Record) -> Wire:
        key = (record.api_key, record.api_url)
        wire = self._wires.get(key)
        if wire is None:
            wire = self._wires[key] = _new_wire(record.api_key, record.api_url)
        return wire

    def _run_info(self, record: Record) -> Any:
        fields: dict[str, Any] = dict(self.trainer or {})
        fields["training_stage"] = record.run.training_stage or fields.get("training_stage")
        if record.run.model_name is not None:
            fields["model_name"] = record.run.model_name
        fields.update(record.run.run_info)
        fields.setdefault("model_name", "unknown")
        known = set(_model("RunInfo").__dataclass_fields__)
        return _model("RunInfo")(**{k: v for k, v in fields.items() if k in known})

    # -- exit ----------------------------------------------------------------------------

    def queued(self) -> int:
        """Rollouts not settled yet: waiting for the uploader thread, or in its hands."""
        with self._queue.mutex:
            waiting = sum(1 for record in self._queue.queue if record is not None)
        return waiting + self._busy

    def flush(self, timeout: float) -> bool:
        """Upload what is queued and send its batches, within ``timeout`` seconds in all;
        ``False`` when time ran out (what is left is dropped with the process, the
        thread being a daemon). With the API known to be down, what is queued is dropped
        (counted) without a request and the batches get :data:`DOWN_GRACE` seconds."""
        deadline = self._deadline = time.monotonic() + timeout
        self._flushing = True
        try:
            if self._thread is not None:
                try:
                    self._queue.put(None, timeout=max(deadline - time.monotonic(), 0.01))
                except queue.Full:
                    return False
                self._thread.join(max(deadline - time.monotonic(), 0.01))
                if self._thread.is_alive():
                    return False
                self._thread = None
            return True
        finally:
            self._flushing = False


def uploader() -> Uploader:
    """This process's uploader."""
    return current().part(Uploader)


def flush(timeout: float = EXIT_BUDGET) -> bool:
    """Wait (at most ``timeout`` seconds) until this process's queued rollouts are
    uploaded; also done at exit."""
    return uploader().flush(timeout)


def _at_exit() -> None:
    """The exit's flush, once however many exit hooks call it, bounded by EXIT_BUDGET."""
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


def _flush_at_exit(process: Process) -> None:
    del process  # nothing to do when nothing was uploaded
    _at_exit()


at_shutdown(SHUTDOWN_ORDER, _flush_at_exit)


# -- the SDK's public upload client (it ships no type information) --------------------------


def _model(name: str) -> Any:
    return getattr(importlib.import_module("openreward.models"), name)


def _new_wire(api_key: str, api_url: str | None) -> Wire:
    """Uploads for ``api_key`` at ``api_url`` (``None``: the SDK's choice,
    ``OPENREWARD_API_URL`` first), with the SDK client's upload settings (its
    ``SendLoopConfig``), and this module's exit flush registered."""
    client: Any = importlib.import_module("openreward").OpenReward(api_key=api_key or None)
    config = client.config.send_loop_config
    if api_url:
        config.base_url = api_url.rstrip("/")
    atexit.register(_at_exit)
    # A multiprocessing child (AsyncGRPO's rollout worker) ends in os._exit without atexit
    # handlers; multiprocessing runs its exit finalizers there.
    multiprocessing.util.Finalize(None, _at_exit, exitpriority=100)
    return Wire(config)


def trl_version() -> str | None:
    """TRL's installed version, read without importing it (0.3 s of CPU in a process that
    does not train, as ``orsgen eval`` does not)."""
    try:
        return importlib.metadata.version("trl")
    except Exception:  # noqa: BLE001 - no trl, no version
        return None

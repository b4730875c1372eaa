"""The uploader behind :mod:`orsgen.runtime.upload` (rollouts in OpenReward's runs UI: opt-in with ``upload_run="NAME"`` (or an
:class:`~orsgen.runtime.rollouts.upload_record.UploadRun`) on an adapter, or ``orsgen eval --upload-run NAME``.

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
torchrun rank have their own) creates it on the platform and logs every event of every
message through the SDK's ``Rollout.log``, whose batches the SDK uploads in the background.
A full queue or an API that is down or refusing drops the rollout: counted as
``ors/upload_dropped`` in the trainer's log and said once per outage.

**An outage costs as little as it can.** A rollout's start is retried on a 5xx
:data:`START_RETRIES` times (0.5 + 1 s; the SDK's own four would take 7.5 s); once a start has
failed (refused, 5xx after those retries, 429), the API is known to be down: rollouts are
dropped at once, and after a pause that grows from :data:`RETRY_FIRST` to :data:`RETRY_MAX`
seconds one rollout is sent as a *probe*, a single request. A probe that goes through ends
the outage. The SDK's batches of the rollouts that started keep its own retries. At exit the queue gets :data:`EXIT_BUDGET` seconds in all
to drain and flush; with the API known to be down, what is queued is dropped (counted) without
a request, and the SDK's batches get :data:`DOWN_GRACE` seconds.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib
import logging
import multiprocessing.util
import queue
import threading
import time
from typing import Any

from orsgen.runtime.rollouts import metrics
from orsgen.runtime.rollouts.upload_record import Record, events
from orsgen.runtime.transport import sdk
from orsgen.runtime.transport.process import Process, at_shutdown, current

logger = logging.getLogger("orsgen.runtime")

QUEUE_SIZE = 2048  # rollouts waiting for the uploader; more are dropped (and counted)
EXIT_BUDGET = 5.0  # seconds the process's exit gives the uploads in all
DOWN_GRACE = 0.5  # seconds the exit gives the SDK's batches when the API is known down
RETRY_FIRST, RETRY_MAX = 2.0, 60.0  # pause before trying again after a failed start
START_RETRIES = 2  # a start's retries on a 5xx while the API is up (0.5 + 1 s); a probe has 0
SHUTDOWN_ORDER = 40  # before the trajectory files (50); independent of sessions


_import_lock = threading.Lock()


class Uploader:
    """This process's uploads (a :meth:`Process.part`: a forked child has its own)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Record | None] = queue.Queue(maxsize=QUEUE_SIZE)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._apis: dict[tuple[str, str | None], Any] = {}  # (key, url) -> SDK RolloutAPI
        self._dropped = 0  # since the last metrics drain
        self._outage: str | None = None  # why uploads fail, while they do
        self._retry_at = 0.0
        self._pause = RETRY_FIRST
        self.trainer: dict[str, Any] | None = None  # RunInfo fields the trainer gave
        self.uploaded = 0
        self.dropped_total = 0
        self.exited = False  # the exit's flush ran
        self._flushing = False  # a flush waits: with the API down, drop without probing
        self._busy = False  # the thread holds a rollout (taken off the queue, not settled)
        metrics.source(self._drain_metric)

    # -- the rollout's side: enqueue only -------------------------------------------------

    def submit(self, record: Record) -> None:
        """Queue ``record`` for upload, never waiting; a full queue drops it (counted)."""
        self._start()
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self._drop(f"the upload queue is full ({QUEUE_SIZE} rollouts waiting)")

    def _drain_metric(self) -> dict[str, float]:
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
                importlib.import_module("openreward.api.rollouts.rollout")
                sdk.quiet_upload_logs()
            except Exception:  # noqa: BLE001 - the first upload says what is wrong
                pass
        self._start()

    def _run(self) -> None:
        while True:
            record = self._queue.get()
            self._busy = record is not None
            try:
                if record is None:
                    return
                self._upload(record)
            except Exception as exc:  # noqa: BLE001 - an upload never ends the thread
                self._drop(f"{type(exc).__name__}: {exc}")
            finally:
                self._busy = False
                self._queue.task_done()

    @property
    def down(self) -> bool:
        """Whether the API is known to be down (a start failed, no probe went through since)."""
        return self._outage is not None

    def _upload(self, record: Record) -> None:
        outage = self._outage
        if outage is not None and (self._flushing or time.monotonic() < self._retry_at):
            self._drop(outage)  # known down: no request, no wait
            return
        api = self._api(record)
        rollout = self._create(api, record, probe=outage is not None)
        if not sdk.rollout_started(rollout):
            with self._lock:
                self._retry_at = time.monotonic() + self._pause
                self._pause = min(self._pause * 2, RETRY_MAX)
            self._drop(f"the platform API at {api.send_loop_config.base_url} refused or is away")
            return
        self._recovered()
        info = _model("RolloutInfo")(
            task_index=-1 if record.task_index is None else record.task_index,
            current_step=record.step,
            duration_ms=record.duration_ms,
            harness="orsgen",
        )
        found = events(record.messages) or [("user_message", {"content": "(no messages)"})]
        for number, (kind, fields) in enumerate(found):
            last = number == len(found) - 1
            rollout.log(
                _event(kind, fields),
                reward=record.reward if last else None,
                is_finished=record.finished if last else False,
                metadata=dict(record.metadata) if last else None,
                rollout_info=info if last else None,
            )
        self.uploaded += 1

    def _create(self, api: Any, record: Record, probe: bool) -> Any:
        """The SDK's ``create()`` (it sends the start event and waits for it), with
        :data:`START_RETRIES` retries on a 5xx, or none for a probe while the API is known
        down. (The SDK's ``Rollout`` reads ``send_loop_config`` for the start alone; its
        batching thread kept the config it started with. Only this thread calls
        ``create()``.)"""
        kwargs: dict[str, Any] = {
            "run_name": record.run.run_name,
            "environment": record.environment,
            "split": record.split,
            "metadata": dict(record.metadata),
            "task_spec": None if record.task_spec is None else dict(record.task_spec),
            "run_info": self._run_info(record),
        }
        config = api.send_loop_config
        retries = 0 if probe else min(START_RETRIES, config.max_retries)
        api.send_loop_config = dataclasses.replace(config, max_retries=retries)
        try:
            return api.create(**kwargs)
        finally:
            api.send_loop_config = config

    def _api(self, record: Record) -> Any:
        key = (record.api_key, record.api_url)
        api = self._apis.get(key)
        if api is None:
            api = self._apis[key] = _rollout_api(record.api_key, record.api_url)
        return api

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
        return waiting + int(self._busy)

    def abandon(self) -> None:
        """Give up on what is still queued: the SDK's own exit handler then waits only
        briefly for its batches (its thread is a daemon and dies with the process)."""
        for api in list(self._apis.values()):
            api.shutdown_timeout = 0.5

    def flush(self, timeout: float) -> bool:
        """Upload what is queued and flush the SDK's batches, within ``timeout`` seconds
        in all; ``False`` when time ran out (what is left is dropped with the process).
        With the API known to be down, what is queued is dropped (counted) without a
        request and the SDK's batches get :data:`DOWN_GRACE` seconds."""
        deadline = time.monotonic() + timeout
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
            for api in list(self._apis.values()):
                left = max(deadline - time.monotonic(), 0.5)
                _close(api, min(left, DOWN_GRACE) if self.down else left)
            self._apis.clear()
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
    before = up.dropped_total
    done = up.flush(EXIT_BUDGET)
    if not done:
        up.abandon()
    lost = up.dropped_total - before + (0 if done else up.queued())
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


def _event(kind: str, fields: dict[str, str]) -> Any:
    """The SDK's upload type for one event (``openreward.api.rollouts.serializers.base``)."""
    base: Any = importlib.import_module("openreward.api.rollouts.serializers.base")
    make = {
        "user_message": base.UserMessage,
        "assistant_message": base.AssistantMessage,
        "system_message": base.SystemMessage,
        "tool_call": base.ToolCall,
        "tool_result": base.ToolResult,
    }[kind]
    return make(**fields)


def _rollout_api(api_key: str, api_url: str | None) -> Any:
    """The SDK's ``RolloutAPI`` (its own background batching thread) for ``api_key`` at
    ``api_url`` (``None``: the SDK's choice, ``OPENREWARD_API_URL`` first). Its exit handler
    would close it before this module's queue is drained, so this module's runs first
    (``atexit`` runs the last registered first)."""
    client: Any = importlib.import_module("openreward").OpenReward(api_key=api_key or None)
    client.config.shutdown_timeout = EXIT_BUDGET
    if api_url:
        client.config.send_loop_config.base_url = api_url.rstrip("/")
    api = client.rollout
    atexit.register(_at_exit)
    # A multiprocessing child (AsyncGRPO's rollout worker) ends in os._exit without atexit
    # handlers; multiprocessing runs its exit finalizers there.
    multiprocessing.util.Finalize(None, _at_exit, exitpriority=100)
    return api


def _close(api: Any, timeout: float) -> None:
    api.shutdown_timeout = timeout
    api.close()


def trl_version() -> str | None:
    try:
        return str(importlib.import_module("trl").__version__)
    except Exception:  # noqa: BLE001 - no trl, no version
        return None

"""What the uploader (:mod:`orsgen.runtime.upload.uploader`) sends, and how: the SDK's
upload protocol (``openreward.api.rollouts``), sent from the uploader's own thread over
one kept-alive HTTP session per API (a :class:`Wire`).

The SDK's ``rollout.create()`` opens a new HTTP session, and so a new connection, for each
rollout's start event and again for its environment lookup, and waits for them without a
timeout. Its batching thread then deep-copies every message event to encode it and is
woken once per event. That was most of an upload's CPU (bench/upload_profile.py). A
:class:`Wire` sends the same requests the SDK's way, with the SDK's event types, its
encoding (:func:`~orsgen.runtime.transport.sdk.encode_event`), its headers and its
``make_request`` (and so its retries), in the same order, a rollout's start acknowledged
before any of its messages:

- ``GET /v1/environments/{owner}/{name}`` for a catalog name, once per environment (the SDK
  asks before every rollout; a failed lookup is asked again, a 4xx answer is kept);
- ``POST /v1/rollouts`` with start events (those of the rollouts the uploader holds, as
  the SDK's batches hold message events), bounded by :data:`START_TIMEOUT` in all (lookup,
  tries and their waits), acknowledged before any event of those rollouts is sent;
- ``POST /v1/rollouts`` with batches of message and ``rollout_update`` events, as the SDK
  batches them (``max_items`` events, ``max_bytes``, ``max_age`` seconds; at most
  ``max_batch_items`` and ``max_batch_bytes`` in one), each with the SDK's retries, within
  the time its caller gives (:data:`BATCH_TIMEOUT` while the run goes on).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import importlib
import json
import logging
import time
import uuid
from collections import deque
from typing import Any

from orsgen.jsonobject import as_object
from orsgen.runtime.transport import sdk
from orsgen.runtime.upload.record import Record, events

logger = logging.getLogger("orsgen.runtime")

START_TIMEOUT = 3.0  # seconds for a rollout's start in all: its lookup, tries and waits
BATCH_TIMEOUT = 10.0  # seconds for a batch in all (the SDK's 4 retries wait 7.5 s)


class StartFailed(Exception):
    """A rollout's start did not go through: refused, failed or not answered in time."""


class StartsOneByOne(Exception):
    """The API turned down several starts in one request (a 4xx other than 429, which the
    SDK, posting each alone, would not meet): from now on this wire takes one at a time."""


@functools.cache
def _module(name: str) -> Any:
    """An SDK module, looked up once (every event needs two)."""
    return importlib.import_module(name)


def _models() -> Any:
    return _module("openreward.models")


def _millis() -> int:
    return int(time.time() * 1000)


def start_fields(record: Record, run_info: Any) -> dict[str, Any]:
    """What ``RolloutAPI.create()`` is given for ``record``'s start (``run_info``: an SDK
    ``RunInfo``), for :meth:`Wire.start`."""
    return {
        "run_name": record.run.run_name,
        "environment": record.environment,
        "split": record.split,
        "metadata": dict(record.metadata),
        "task_spec": None if record.task_spec is None else dict(record.task_spec),
        "run_info": run_info,
    }


def _event(kind: str, fields: dict[str, str]) -> Any:
    """The SDK's upload type for one event (``openreward.api.rollouts.serializers.base``)."""
    base = _module("openreward.api.rollouts.serializers.base")
    make = {
        "user_message": base.UserMessage,
        "assistant_message": base.AssistantMessage,
        "system_message": base.SystemMessage,
        "tool_call": base.ToolCall,
        "tool_result": base.ToolResult,
    }[kind]
    return make(**fields)


class Wire:
    """Uploads to one API (the SDK's ``SendLoopConfig``: its URL, key, batching and retry
    settings), from one thread: every method runs this wire's event loop in the caller's
    thread, so only the thread that made it may call them."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.base_url: str = config.base_url
        self.one_by_one = False  # the API turned down several starts in one request
        self._loop = asyncio.new_event_loop()
        self._session: Any = None  # aiohttp.ClientSession, made in the loop on first use
        self._agent = sdk.upload_user_agent()
        self._pending: deque[tuple[dict[str, Any], int]] = deque()  # encoded, its size
        self._pending_bytes = 0
        self._oldest: float | None = None  # when the oldest pending event was added
        self._environments: dict[str, str | None] = {}  # catalog name -> platform id

    # -- requests ----------------------------------------------------------------------

    async def _request(self, method: str, url: str, body: Any, retries: int, key: bool) -> Any:
        if self._session is None:
            aiohttp = _module("aiohttp")
            self._session = aiohttp.ClientSession(base_url=self.base_url)  # as the SDK's
        headers = {"User-Agent": self._agent}
        if key:
            headers = {"x-api-key": self.config.api_key, **headers}
        c = self.config
        make_request: Any = _module("openreward.http_client").make_request
        return await make_request(
            client=self._session,
            url=url,
            method=method,
            data={},
            headers=headers,
            body=body,
            max_retries=retries,
            backoff_base=c.backoff_base,
            backoff_factor=c.backoff_factor,
            backoff_cap=c.backoff_cap,
        )

    def _send(self, method: str, url: str, body: Any, retries: int, timeout: float) -> Any:
        """One request with its retries, given up after ``timeout`` seconds in all. A
        kept-alive connection the server closed meanwhile is tried once more at once."""
        deadline = time.monotonic() + timeout
        aiohttp = _module("aiohttp")
        for again in (True, False):
            left = deadline - time.monotonic()
            if left <= 0:
                raise asyncio.TimeoutError()
            request = self._request(method, url, body, retries, key=method == "POST")
            try:
                return self._loop.run_until_complete(asyncio.wait_for(request, left))
            except aiohttp.ServerDisconnectedError:
                if not again:
                    raise
        raise AssertionError("unreachable")

    # -- a rollout's start -------------------------------------------------------------

    def _environment_id(self, environment: str | None, retries: int, deadline: float) -> Any:
        """The platform's id of a catalog environment (``owner/name``), as the SDK's
        ``_fetch_environment_id`` asks for it (no key), once; ``None`` when not known."""
        if environment is None or "/" not in environment:
            return None
        if environment in self._environments:
            return self._environments[environment]
        owner, name = environment.split("/", 1)
        left = deadline - time.monotonic()
        try:
            found = self._send("GET", f"/v1/environments/{owner}/{name}", None, retries, left)
        except Exception as exc:  # noqa: BLE001 - the start goes without it, as the SDK's
            status = getattr(exc, "status", None)
            if isinstance(status, int) and 400 <= status < 500:
                self._environments[environment] = None  # an answer: not asked again
            return None
        found_id: Any = as_object(found).get("id")
        self._environments[environment] = found_id
        return found_id

    def start(self, retries: int, starts: list[dict[str, Any]]) -> list[WireRollout]:
        """Post rollouts' start events (``RolloutAPI.create``'s, each from its fields:
        ``run_name``, ``environment``, ``split``, ``metadata``, ``task_spec`` and
        ``run_info``, an SDK ``RunInfo``), in one request, with ``retries`` retries on a
        5xx, and wait for it, at most :data:`START_TIMEOUT` seconds in all;
        :class:`StartFailed` when it fails."""
        deadline = time.monotonic() + START_TIMEOUT
        models = _models()
        started: list[WireRollout] = []
        encoded: list[dict[str, Any]] = []
        for fields in starts:
            run_info = fields.get("run_info")
            config = models.RolloutConfig(
                **{**fields, "run_info": None if run_info is None else dataclasses.asdict(run_info)}
            )
            event_id = str(uuid.uuid4())
            environment_id = self._environment_id(config.environment, retries, deadline)
            event = models.RolloutStartedEvent.from_config(
                event_id=event_id,
                timestamp=_millis(),
                config=config,
                environment_id=environment_id,
                variant_id=None,
            )
            encoded.append(sdk.encode_event(event))
            started.append(WireRollout(self, event_id, environment_id))
        body = {"events": encoded}
        try:
            self._send("POST", "/v1/rollouts", body, retries, deadline - time.monotonic())
        except asyncio.TimeoutError:
            raise StartFailed(
                f"the platform API at {self.base_url} did not answer rollouts' start "
                f"within {START_TIMEOUT:g} s"
            ) from None
        except Exception as exc:  # noqa: BLE001 - refused, 5xx after the retries, 429, 4xx
            status = getattr(exc, "status", None)
            if (
                len(encoded) > 1
                and isinstance(status, int)
                and 400 <= status < 500
                and status != 429
            ):
                self.one_by_one = True
                raise StartsOneByOne(status) from None
            raise StartFailed(
                f"the platform API at {self.base_url} refused or is away: "
                f"{type(exc).__name__}: {str(exc)[:200]}"
            ) from None
        return started

    # -- message batches ---------------------------------------------------------------

    def add(self, event: Any) -> None:
        """Queue an encoded event for the next batch (sent by :meth:`send_due`)."""
        encoded = sdk.encode_event(event)
        size = len(json.dumps(encoded, separators=(",", ":"), ensure_ascii=False).encode())
        self._pending.append((encoded, size))
        self._pending_bytes += size
        if self._oldest is None:
            self._oldest = time.monotonic()

    def due_in(self) -> float | None:
        """Seconds until the pending events are ``max_age`` old (``None``: none pending)."""
        if self._oldest is None:
            return None
        age: float = self.config.max_age
        return max(self._oldest + age - time.monotonic(), 0.0)

    def _due(self) -> bool:
        c = self.config
        return (
            len(self._pending) >= c.max_items
            or self._pending_bytes >= c.max_bytes
            or (self.due_in() == 0.0)
        )

    def send_due(self, timeout: float, everything: bool = False) -> None:
        """Send the batches that are due (all of them with ``everything``), within
        ``timeout`` seconds in all. A batch that fails is dropped, as the SDK drops it."""
        deadline = time.monotonic() + timeout
        while self._pending and (everything or self._due()):
            events: list[dict[str, Any]] = []
            size = 0
            while self._pending and len(events) < self.config.max_batch_items:
                encoded, n = self._pending[0]
                if events and size + n > self.config.max_batch_bytes:
                    break
                self._pending.popleft()
                events.append(encoded)
                size += n
            self._pending_bytes -= size
            if not self._pending:
                self._oldest = None
            left = deadline - time.monotonic()
            try:
                self._send(
                    "POST", "/v1/rollouts", {"events": events}, self.config.max_retries, left
                )
            except Exception as exc:  # noqa: BLE001 - the SDK logs and drops a failed batch
                logger.debug("a batch of %d rollout events was not uploaded: %r", len(events), exc)

    def close(self, timeout: float) -> None:
        """Send what is pending within ``timeout`` seconds, then close the session."""
        try:
            self.send_due(timeout, everything=True)
        finally:
            self._pending.clear()
            self._pending_bytes, self._oldest = 0, None
            if self._session is not None:
                session, self._session = self._session, None
                self._loop.run_until_complete(session.close())
            self._loop.close()


class WireRollout:
    """A started rollout: :meth:`log` is the SDK's ``Rollout.log``."""

    def __init__(self, wire: Wire, event_id: str, environment_id: Any) -> None:
        self.wire = wire
        self.event_id = event_id
        self.environment_id = environment_id
        self.logged = 0

    def log(
        self,
        message: Any,
        reward: float | None = None,
        is_finished: bool | None = False,
        metadata: dict[str, Any] | None = None,
        rollout_info: Any = None,
    ) -> None:
        """One event (an SDK ``UploadType``), as ``Rollout.log`` makes it: the SDK's
        ``base_to_normalized``, then a ``rollout_update`` event first when ``rollout_info``
        is given, then the message event with the next index."""
        base = _module("openreward.api.rollouts.serializers.base")
        models = _models()
        normalized = base.base_to_normalized([message])[0]
        if rollout_info is not None:
            info = dataclasses.asdict(rollout_info)
            update = models.RolloutUpdateEvent(
                eventId=self.event_id, timestamp=_millis(), rollout_info=info
            )
            self.wire.add(update)
        event = models.LogMessageEvent(
            eventId=str(uuid.uuid4()),
            timestamp=_millis(),
            index=self.logged,
            rolloutEventId=self.event_id,
            environment_id=self.environment_id,
            type=normalized.type,
            content=normalized.content,
            contentReference=normalized.content_reference,
            summary=normalized.summary,
            name=normalized.name,
            callId=normalized.call_id,
            reward=reward,
            isFinished=bool(is_finished),
            metadata=metadata or {},
        )
        self.wire.add(event)
        self.logged += 1

    def log_record(self, record: Record) -> None:
        """Every event of ``record``'s messages, the reward, ``is_finished``, orsgen's
        metadata and a ``RolloutInfo`` on the last (as the uploader logged them through the
        SDK's ``Rollout.log``)."""
        info = _models().RolloutInfo(
            task_index=-1 if record.task_index is None else record.task_index,
            current_step=record.step,
            duration_ms=record.duration_ms,
            harness="orsgen",
        )
        found = events(record.messages) or [("user_message", {"content": "(no messages)"})]
        for number, (kind, fields) in enumerate(found):
            last = number == len(found) - 1
            self.log(
                _event(kind, fields),
                reward=record.reward if last else None,
                is_finished=record.finished if last else False,
                metadata=dict(record.metadata) if last else None,
                rollout_info=info if last else None,
            )

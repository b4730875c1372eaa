"""Opening a rollout's session: what every session of one adapter is opened with, which
prefetch stream its resets share, and one reset's open under the call policy: on which of
several servers, in which place under the session cap, waiting out outages and refusals."""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orsgen.canonical import sha256_of
from orsgen.jsonobject import is_object
from orsgen.runtime.errors import EnvironmentUnavailableError, SessionOpenError, describe
from orsgen.runtime.sessions import cap, drift, pool
from orsgen.runtime.transport import health, sdk
from orsgen.runtime.transport.endpoint import Endpoint
from orsgen.runtime.transport.health import ServerHealth
from orsgen.runtime.transport.policy import Action, CallPolicy
from orsgen.runtime.transport.process import current
from orsgen.runtime.transport.replicas import ReplicaPool
from orsgen.runtime.transport.sdk import Opened

# How long a failed reset may spend asking how many tasks its split has.
COUNT_TIMEOUT = 10.0


@dataclass(frozen=True)
class TaskRef:
    """Which task a reset opens: a task index, or a task spec the trainer gave."""

    index: int | None
    spec: Mapping[str, Any] | None = field(default=None, compare=False)
    # Hashable; equal keys are one GRPO group and one prefetch stream entry.
    key: tuple[str, str] = field(init=False)

    def __post_init__(self) -> None:
        key = ("index", str(self.index))
        if self.index is None:
            try:
                key = ("spec", json.dumps(self.spec, sort_keys=True, default=repr))
            except (TypeError, ValueError):
                key = ("spec-id", str(id(self.spec)))
        object.__setattr__(self, "key", key)


@dataclass(frozen=True, eq=False)
class SessionOptions:
    """Where and how an adapter's sessions open. Secrets and overrides stay out of ``repr``."""

    endpoint: Endpoint
    split: str
    secrets: dict[str, Any] | None = field(repr=False)
    keepalive: float | None
    toolset: str | None
    env_overrides: dict[str, str] | None = field(repr=False)
    # How many consecutive resets of one task open at once (GRPO's group, prefetch):
    # None learns it from the resets, 1 turns prefetch off.
    prefetch_group: int | None
    open_timeout: float
    reconnect_for: float
    strict: bool
    # Every server of the environment (``base_url=[...]``); ``endpoint`` is the first, or
    # the one a session is on (:meth:`at`).
    servers: tuple[Endpoint, ...] = ()
    max_sessions: int | None = None  # per adapter class and process

    def at(self, endpoint: Endpoint | None) -> SessionOptions:
        """These options on one server (the one a session was opened on)."""
        if endpoint is None or endpoint == self.endpoint:
            return self
        return dataclasses.replace(self, endpoint=endpoint)

    def prefetcher(self, owner: type) -> pool.Prefetcher:
        """The prefetch stream of resets of the same class, endpoint and session options."""
        secrets = tuple(sorted((self.secrets or {}).items()))
        overrides = sha256_of(sorted((self.env_overrides or {}).items()))  # the key holds no value
        owner_name = (owner.__module__, owner.__qualname__)
        key = (*owner_name, self.endpoint, self.split, secrets, overrides, self.keepalive)
        return pool.prefetcher(key, owner)

    def policy(self) -> CallPolicy:
        record = health.record(self.endpoint.session_url)
        return CallPolicy(record, self.reconnect_for, strict=self.strict)

    def open(self, owner: type, task: TaskRef) -> Opened | None:
        """Open a session of ``owner`` (an adapter class) as the call policy says; ``None``: the
        reconnect window passed and the rollout runs degraded. Raises :class:`SessionOpenError`,
        or ``SessionCapError`` at once for a cap that could never let this reset through."""
        attempt = _Attempt(self, owner, task)
        try:
            return attempt.run()
        finally:
            attempt.finish()

    def take(self, owner: type, task: TaskRef, claim: cap.Claim | None = None) -> Opened:
        index = task.index
        opener = functools.partial(
            sdk.open_session,
            self.endpoint,
            self.split,
            index,
            task.spec,
            self.secrets,
            self.keepalive,
            toolset=self.toolset,
            env_overrides=self.env_overrides,
        )
        url = self.endpoint.session_url
        check = drift.claim_check(owner, url, (self.split, index))  # list the tools too?
        try:
            stream = self.prefetcher(owner)
            return stream.take(
                task.key, opener, self.prefetch_group, check, self.open_timeout, claim, url
            )
        except (cap.NoPlace, cap.SessionCapError):
            raise
        except Exception as exc:
            if index is not None and self._split_is_empty(exc):
                raise SessionOpenError(
                    f"{self.failure(index)}: split {self.split!r} has no tasks; pass a split "
                    "that has tasks as split= (or train on task_spec=... rows)"
                ) from exc
            raise SessionOpenError(f"{self.failure(index)}: {describe(exc)}") from exc

    def _split_is_empty(self, exc: BaseException) -> bool:
        """Whether an open failed with the server's bare HTTP 400 because the split is empty."""
        answer = health.answer(exc)
        if answer is None or answer.status != 400:
            return False

        async def count() -> object:
            env = await sdk.environment(self.endpoint)
            path = self.endpoint.env_path("/num_tasks")
            return await sdk.stateless(self.endpoint, env, "POST", path, {"split": self.split})

        try:
            found = current().run(count(), timeout=COUNT_TIMEOUT)
        except Exception:  # noqa: BLE001 - only a better message; the original error stands
            return False
        return is_object(found) and found.get("num_tasks") == 0

    def failure(self, index: int | None) -> str:
        which = "the given task_spec" if index is None else f"task {index}"
        return (
            f"could not open an ORS session for {which} of split {self.split!r} on "
            f"{self.endpoint.label}"
        )


class _Attempt:
    """One reset's open, across servers and retries."""

    def __init__(self, options: SessionOptions, owner: type, task: TaskRef) -> None:
        self.options, self.owner, self.task = options, owner, task
        self.claim = cap.claim(owner, options.max_sessions, options.reconnect_for)
        self.servers = options.servers or (options.endpoint,)
        self.failed: set[str] = set()  # servers that did not answer this open
        self.refused: dict[str, ServerHealth] = {}  # servers that refused it, for the log
        self.first_refusal: float | None = None
        self.refusals = 0
        self.accepted = False

    def run(self) -> Opened | None:
        err: SessionOpenError | None = None
        while True:
            here = self.options.at(self._pick())
            policy = here.policy()
            action = policy.before_open()
            if action is Action.GO:
                try:
                    opened = here.take(self.owner, self.task, self.claim)
                except cap.NoPlace as exc:
                    return self._past_window(here, exc)
                except SessionOpenError as exc:
                    err = exc
                    action = self._after_failure(here, policy, exc.__cause__)
                    if action is Action.FAIL:
                        raise
                    if action is Action.RETRY:
                        continue
                else:
                    policy.succeeded()
                    self.accepted = True
                    return opened
            return self._past_window(here, err)

    def _pick(self) -> Endpoint:
        """The server for the next try (docs/scale.md, "Several servers")."""
        urls = [e.session_url for e in self.servers]
        if len(urls) == 1:
            return self.servers[0]
        records = [health.record(url) for url in urls]
        for record in records:
            record.probe_later()  # a server that is down rejoins when it answers
        servers = ReplicaPool([r for r in records if r.url not in self.failed] or records)
        open_on = cap.of(self.owner).open_on()
        chosen = servers.choose(load=lambda r: open_on.get(r.url, 0), tries=False)
        return self.servers[records.index(chosen or servers.last_down())]

    def _after_failure(
        self, here: SessionOptions, policy: CallPolicy, cause: BaseException | None
    ) -> Action:
        url = here.endpoint.session_url
        if cause is not None and health.refusal(cause) is not None:
            self.refused[url] = policy.health
            if self.first_refusal is None:
                self.first_refusal = time.monotonic()
            action = policy.open_refused(cause, self.first_refusal, self.refusals)
            self.refusals += 1
            return action
        if cause is not None and health.unreachable(cause) and len(self.servers) > 1:
            policy.health.away(cause)
            self.failed.add(url)
            if len(self.failed) < len(self.servers):
                return Action.RETRY  # another server may answer: try it at once
        return policy.open_failed(cause)

    def _past_window(self, here: SessionOptions, err: BaseException | None) -> Opened | None:
        """The window passed: degrade (``None``), or with ``strict`` raise."""
        if not self.options.strict:
            return None
        failed = here.failure(self.task.index)
        if isinstance(err, cap.NoPlace):
            raise EnvironmentUnavailableError(f"{failed}: {err} (strict=True)") from None
        cause = err.__cause__ if err is not None else None
        last = f"; last: {describe(cause)}" if cause is not None else ""
        why = "refused new sessions" if self.refusals else "did not answer"
        raise EnvironmentUnavailableError(
            f"{failed}: the server {why} within reconnect_for={self.options.reconnect_for:g} s "
            f"(strict=True){last}"
        ) from err

    def finish(self) -> None:
        for record in self.refused.values():
            record.done_waiting(self.accepted)

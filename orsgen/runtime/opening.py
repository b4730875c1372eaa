"""Opening a rollout's session: what every session of one adapter is opened with, which
prefetch stream its resets share, and one reset's open under the call policy."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orsgen.canonical import sha256_of
from orsgen.jsonobject import is_object
from orsgen.runtime import drift, health, pool, sdk
from orsgen.runtime.endpoint import Endpoint
from orsgen.runtime.errors import EnvironmentUnavailableError, SessionOpenError, describe
from orsgen.runtime.health import Action, CallPolicy
from orsgen.runtime.options import task_key
from orsgen.runtime.process import current
from orsgen.runtime.sdk import Opened

# How long a failed reset may spend asking how many tasks its split has.
COUNT_TIMEOUT = 10.0


def _is_bad_request(exc: BaseException) -> bool:
    """Whether the server answered HTTP 400 (the request itself was refused)."""
    seen: BaseException | None = exc
    while seen is not None:
        if getattr(seen, "status", None) == 400:
            return True
        seen = seen.__cause__
    return False


async def _num_tasks(endpoint: Endpoint, split: str) -> object:
    env = await sdk.environment(endpoint)
    path = endpoint.env_path("/num_tasks")
    answer = await sdk.stateless(endpoint, env, "POST", path, {"split": split})
    return answer.get("num_tasks") if is_object(answer) else None


@dataclass(frozen=True, eq=False)
class SessionOptions:
    """Where and how an adapter's sessions open. Secrets and overrides stay out of ``repr``."""

    endpoint: Endpoint
    split: str
    secrets: dict[str, Any] | None = field(repr=False)
    keepalive: float | None
    toolset: str | None
    env_overrides: dict[str, str] | None = field(repr=False)
    group_size: int | None  # None: learned from the resets; 1: no prefetch
    open_timeout: float
    reconnect_for: float
    strict: bool

    def stream_key(self, owner: type) -> tuple[Any, ...]:
        """Which resets share one prefetch stream: same class, endpoint and session options."""
        secrets = tuple(sorted((self.secrets or {}).items()))
        # Hashed: the stream key holds no override values.
        overrides = sha256_of(sorted((self.env_overrides or {}).items()))
        return (
            owner.__module__,
            owner.__qualname__,
            self.endpoint,
            self.split,
            secrets,
            overrides,
            self.keepalive,
        )

    def prefetcher(self, owner: type) -> pool.Prefetcher:
        return pool.prefetcher(self.stream_key(owner), owner)

    def policy(self) -> CallPolicy:
        """The call policy for this endpoint's server and these settings."""
        record = health.record(self.endpoint.session_url)
        return CallPolicy(record, self.reconnect_for, strict=self.strict)

    def open(
        self, owner: type, index: int | None, task_spec: Mapping[str, Any] | None
    ) -> Opened | None:
        """Open a session of ``owner`` (an adapter class) as the call policy says, waiting
        for a server that went away. ``None``: the reconnect window passed and the rollout
        runs degraded. Raises :class:`SessionOpenError`."""
        policy = self.policy()
        action, err = policy.before_open(), None
        while action in (Action.GO, Action.RETRY):
            try:
                opened = self._take(owner, index, task_spec)
            except SessionOpenError as exc:
                action, err = policy.open_failed(exc.__cause__), exc
                if action is Action.FAIL:
                    raise
                continue
            policy.succeeded()
            return opened
        if action is Action.UNAVAILABLE:
            last = f"; last: {describe(err.__cause__)}" if err and err.__cause__ else ""
            raise EnvironmentUnavailableError(
                f"{self._failed(index)}: the server did not answer within "
                f"reconnect_for={self.reconnect_for:g} s (strict=True){last}"
            ) from err
        return None

    def _take(self, owner: type, index: int | None, task_spec: Mapping[str, Any] | None) -> Opened:
        opener = functools.partial(
            sdk.open_session,
            self.endpoint,
            self.split,
            index,
            task_spec,
            self.secrets,
            self.keepalive,
            toolset=self.toolset,
            env_overrides=self.env_overrides,
        )
        # The class's first session in this process also lists its tools (the drift guard).
        check = drift.claim_check(owner)
        key = task_key(index, task_spec)
        try:
            stream = self.prefetcher(owner)
            return stream.take(key, opener, self.group_size, check, self.open_timeout)
        except Exception as exc:
            if index is not None and _is_bad_request(exc) and self._split_is_empty():
                # The server's own answer is a bare "Invalid index" (HTTP 400).
                raise SessionOpenError(
                    f"{self._failed(index)}: split {self.split!r} has no tasks; pass a split "
                    "that has tasks as split= (or train on task_spec=... rows)"
                ) from exc
            raise SessionOpenError(f"{self._failed(index)}: {describe(exc)}") from exc

    def _split_is_empty(self) -> bool:
        """Whether the server says this split has 0 tasks (``False`` when it cannot say)."""
        try:
            count = current().run(_num_tasks(self.endpoint, self.split), timeout=COUNT_TIMEOUT)
        except Exception:  # noqa: BLE001 - only a better message; the original error stands
            return False
        return count == 0

    def _failed(self, index: int | None) -> str:
        which = "the given task_spec" if index is None else f"task {index}"
        return (
            f"could not open an ORS session for {which} of split {self.split!r} on "
            f"{self.endpoint.label}"
        )

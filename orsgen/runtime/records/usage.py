"""What one rollout used of its environment: its reset and its tool calls.

A rollout's :class:`~orsgen.runtime.episode.Outcome` carries its :class:`Usage`, so the
``ors/*`` figures of a reward batch count the calls and resets *of that batch's
rollouts* (:mod:`orsgen.runtime.metrics`), not everything the process did since the
last drain (a scratch adapter's calls, a rollout never scored).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol


class _Call(Protocol):
    @property
    def seconds(self) -> float: ...

    @property
    def failure(self) -> str | None: ...

    @property
    def environment_failed(self) -> bool: ...


@dataclass(frozen=True)
class Usage:
    """One rollout's reset (0 or 1, with its seconds) and calls (failed, failed by the
    environment, seconds)."""

    resets: int = 0
    reset_seconds: float = 0.0
    calls: int = 0
    failed_calls: int = 0
    env_failed_calls: int = 0
    call_seconds: float = 0.0


def usage_of(opened: bool, reset_seconds: float, calls: Iterable[_Call]) -> Usage:
    """The usage of a rollout that ``opened`` (reset onto a task) and made ``calls``."""
    listed = list(calls)
    return Usage(
        resets=int(opened),
        reset_seconds=reset_seconds if opened else 0.0,
        calls=len(listed),
        failed_calls=sum(1 for c in listed if c.failure is not None),
        env_failed_calls=sum(1 for c in listed if c.failure is not None and c.environment_failed),
        call_seconds=sum(c.seconds for c in listed),
    )

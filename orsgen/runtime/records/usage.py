"""What one rollout used of its environment: its reset and its tool calls.

A rollout's :class:`~orsgen.runtime.episode.Outcome` carries its :class:`Usage`, so the
``ors/*`` figures of a reward batch count the calls and resets *of that batch's
rollouts* (:mod:`orsgen.runtime.metrics`), not everything the process did since the
last drain (a scratch adapter's calls, a rollout never scored).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable, Mapping
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


def tool_names(owner: type) -> list[str]:
    """The tools ``GRPOTrainer`` offers the model for an ``owner`` adapter: the class's
    public functions (properties and classmethods excluded) except ``reset`` and
    ``get_reward``, in name order, as ``inspect.getmembers`` lists them to TRL."""
    return [
        name
        for name, _ in inspect.getmembers(owner, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


@functools.cache
def model_names(owner: type) -> Mapping[str, str]:
    """Each tool's wire name mapped to the name the model calls it by (the adapter's method,
    from ``WIRE_NAMES``); a wire name the map leaves out (the terminal tool, which the model
    never sees) keeps its own."""
    wire_names: Mapping[str, tuple[str, object]] = getattr(owner, "WIRE_NAMES", {})
    return {wire: method for method, (wire, _) in wire_names.items()}

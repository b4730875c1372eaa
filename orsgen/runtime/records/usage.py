"""What one rollout used of its environment: its reset and its tool calls, also per tool.

A rollout's :class:`~orsgen.runtime.episode.Outcome` carries its :class:`Usage`, so the
``ors/*`` figures of a reward batch count the calls and resets *of that batch's
rollouts* (:mod:`orsgen.runtime.records.metrics`), not everything the process did since the
last drain (a scratch adapter's calls, a rollout never scored).

Per tool, the key count is bounded: an adapter class has at most :data:`MAX_TOOLS` tools
with keys of their own (:func:`tool_keys`: the first ones in TRL's order, the same on
every rank), and the calls of any other tool count under :data:`OTHER`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

MAX_TOOLS = 16  # tools of one adapter class with ors/tool/<name>/* keys of their own
OTHER = "_other"  # where the calls of the others count


class _Call(Protocol):
    @property
    def tool(self) -> str: ...

    @property
    def seconds(self) -> float: ...

    @property
    def failure(self) -> str | None: ...

    @property
    def environment_failed(self) -> bool: ...


@dataclass(frozen=True)
class ToolUse:
    """One tool's calls in a rollout: how many, how many failed, their seconds."""

    calls: int = 0
    failed: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Usage:
    """One rollout's reset (0 or 1, with its seconds) and calls (failed, failed by the
    environment, seconds), and per tool key (every key of its class, called or not)."""

    resets: int = 0
    reset_seconds: float = 0.0
    calls: int = 0
    failed_calls: int = 0
    env_failed_calls: int = 0
    call_seconds: float = 0.0
    tools: Mapping[str, ToolUse] = field(default_factory=lambda: {})


def usage_of(
    opened: bool, reset_seconds: float, calls: Iterable[_Call], owner: type | None = None
) -> Usage:
    """The usage of a rollout of an ``owner`` adapter that ``opened`` (reset onto a task)
    and made ``calls``; without ``owner``, each call counts under its own wire name."""
    listed = list(calls)
    keys = tool_keys(owner) if owner is not None else ()
    names: Mapping[str, str] = model_names(owner) if owner is not None else {}
    tools: dict[str, list[float]] = {key: [0, 0, 0.0] for key in keys}
    for c in listed:
        key = names.get(c.tool, c.tool)
        if owner is not None and key not in keys:
            key = OTHER
        counts = tools.setdefault(key, [0, 0, 0.0])
        counts[0] += 1
        counts[1] += c.failure is not None
        counts[2] += c.seconds
    return Usage(
        resets=int(opened),
        reset_seconds=reset_seconds if opened else 0.0,
        calls=len(listed),
        failed_calls=sum(1 for c in listed if c.failure is not None),
        env_failed_calls=sum(1 for c in listed if c.failure is not None and c.environment_failed),
        call_seconds=sum(c.seconds for c in listed),
        tools={k: ToolUse(int(n), int(failed), s) for k, (n, failed, s) in tools.items()},
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


@functools.cache
def tool_keys(owner: type) -> tuple[str, ...]:
    """The tools of an ``owner`` adapter with ``ors/tool/<name>/*`` keys of their own: the
    first :data:`MAX_TOOLS` of the tools TRL offers the model (:func:`tool_names`) and the
    terminal tool, then :data:`OTHER` when there are more. The class alone decides them, so
    every rank logs the same keys."""
    terminal: tuple[str, object] | None = getattr(owner, "TERMINAL_TOOL", None)
    names = tool_names(owner) + ([] if terminal is None else [terminal[0]])
    return tuple(names[:MAX_TOOLS]) + ((OTHER,) if len(names) > MAX_TOOLS else ())

"""Per-tool figures of a set of rollouts (``summary.json``'s ``tools``, ``orsgen view``),
from each row's ``tool_calls`` (docs/evaluating.md). :class:`ToolTally` folds rows in as they
are read, keeping per tool a few counters and the call times as 8-byte floats, so ``p90_s``
is exact, found from the slowest tenth, never a full sort.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from orsgen.jsonobject import as_array
from orsgen.runtime.errors import MODEL_REASONS, OFF_RECORDING
from orsgen.runtime.records.episode import Call
from orsgen.runtime.records.episode import model_names

UNKNOWN = "_unknown"  # calls to a tool the adapter does not have
FAILED_BY = ("environment", "model", "recording")  # recording: off orsgen serve's recording


def failed_by(reason: str | None) -> str | None:
    """Who failed a call that failed for ``reason`` (``None``: it did not fail)."""
    if reason is None:
        return None
    if reason == OFF_RECORDING:
        return FAILED_BY[2]
    return FAILED_BY[1] if reason in MODEL_REASONS else FAILED_BY[0]


def tool_calls(owner: type, calls: Iterable[Call]) -> list[list[Any]]:
    """A rollout's recorded calls (an ``owner`` adapter's episode) as ``tool_calls`` entries."""
    names = model_names(owner)
    return [[names.get(c.tool, c.tool), failed_by(c.failure), round(c.seconds, 6)] for c in calls]


@dataclass(slots=True)
class _Tool:
    calls: int = 0
    environment_failed: int = 0
    model_failed: int = 0
    off_recording: int = 0
    seconds: array[float] = field(default_factory=lambda: array("d"))

    def figures(self) -> dict[str, Any]:
        times = self.seconds
        return {
            "calls": self.calls,
            "failed": self.environment_failed + self.model_failed + self.off_recording,
            "environment_failed": self.environment_failed,
            "model_failed": self.model_failed,
            "off_recording": self.off_recording,
            "mean_s": math.fsum(times) / len(times) if times else None,
            "p90_s": nearest_rank(times, 0.9),
        }


def nearest_rank(values: Sequence[float], q: float) -> float | None:
    """The smallest value that at least ``q`` of ``values`` are at most (exact): the
    smallest of the values above the first ``ceil(q * n) - 1``."""
    if not values:
        return None
    above = len(values) - max(math.ceil(q * len(values)) - 1, 0)
    return min(heapq.nlargest(above, values))


class ToolTally:
    """Per-tool counts of the rows folded in (:meth:`add`), in one pass."""

    def __init__(self) -> None:
        self._tools: defaultdict[str, _Tool] = defaultdict(_Tool)

    def add(self, calls: object) -> None:
        """Fold in one row's ``tool_calls`` (a row without them adds nothing)."""
        for entry in as_array(calls):
            name, failed_by, seconds = as_array(entry)
            tool = self._tools[str(name)]
            tool.calls += 1
            tool.environment_failed += failed_by == FAILED_BY[0]
            tool.model_failed += failed_by == FAILED_BY[1]
            tool.off_recording += failed_by == FAILED_BY[2]
            tool.seconds.append(float(seconds))

    def figures(self) -> dict[str, dict[str, Any]]:
        """``{tool: {calls, failed, environment_failed, model_failed, mean_s, p90_s}}``, by name."""
        return {name: self._tools[name].figures() for name in sorted(self._tools)}

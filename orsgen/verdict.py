"""The verdict rules, each in one place, for ``orsgen replay`` and ``orsgen compare``: when
a rollout *passes*, when two rewards *differ*, and what a *flip* is."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from orsgen.runtime.records.passk import passes

__all__ = ["Flip", "differ", "changed", "flip", "pass_rate", "passes"]

Flip = Literal["fail_to_pass", "pass_to_fail"]


def differ(a: float | None, b: float | None, tolerance: float = 0.0) -> bool:
    """Whether two rewards differ: one is ``None`` and the other not, or they are more than
    ``tolerance`` apart."""
    if a is None or b is None:
        return (a is None) != (b is None)
    return abs(float(a) - float(b)) > tolerance


def changed(was: float | None, now: Iterable[float | None], tolerance: float = 0.0) -> bool:
    """Whether **no** one of ``now`` (at least one) reproduces ``was`` within ``tolerance``."""
    seen = list(now)
    return bool(seen) and all(differ(was, x, tolerance) for x in seen)


def pass_rate(reward: float | None, threshold: float) -> float:
    return 1.0 if passes(reward, threshold) else 0.0


def flip(was: float, now: Iterable[float]) -> Flip | None:
    """A flip of a pass rate ``was``, judged like a change: ``fail_to_pass`` when every one of
    ``now`` is above it, ``pass_to_fail`` when every one is below it."""
    seen = list(now)
    if seen and all(x > was for x in seen):
        return "fail_to_pass"
    if seen and all(x < was for x in seen):
        return "pass_to_fail"
    return None

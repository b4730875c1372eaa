"""Outcome-only rewards computed from the adapters' rollout state."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def outcome_reward(environments: Sequence[Any], **_: Any) -> list[float | None]:
    """The last non-null reward of each rollout, or ``None`` when the rollout was never scored.

    ``None`` covers no call at all, only unscored calls and only failed calls; a later
    unscored or failed call never erases an earlier score; ``0.0`` and negative rewards
    are real scores.
    """
    out: list[float | None] = []
    for env in environments:
        scored = [r for r in getattr(env, "rewards", []) if r is not None]
        out.append(float(scored[-1]) if scored else None)
    return out

"""The pass rule, and pass@k over groups of rollouts of one task: the unbiased estimator of
Chen et al. (2021) and its all-pass counterpart. Pure; shared by the trainer's
``ors/pass@k`` metrics, the per-task table, the pass-rate curriculum and ``orsgen eval``.

**The pass rule** (the only one): a rollout *passes* when it has a reward and that reward is
at least the adapter's ``pass_threshold`` (:func:`passes`; default :data:`PASS_THRESHOLD`,
full marks). An unscored rollout (reward ``None``) never passes."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

# The default pass threshold: full marks (binary environments score 1.0 for a pass).
PASS_THRESHOLD = 1.0


def passes(reward: float | None, threshold: float) -> bool:
    """Whether a rollout with ``reward`` passes: it was scored and ``reward >= threshold``."""
    return reward is not None and reward >= threshold


def check_threshold(threshold: object) -> float:
    """``threshold`` as a float, refusing what no reward could be compared with."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise TypeError(f"pass_threshold must be a number, got {threshold!r}")
    if not math.isfinite(threshold):
        raise ValueError(f"pass_threshold must be finite, got {threshold!r}")
    return float(threshold)


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """At least one of ``k`` samples drawn from ``n`` (``c`` of them passing) passes:
    ``1 - C(n-c, k) / C(n, k)``."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    # The product form of 1 - C(n-c, k) / C(n, k): exact in floats for any n.
    fail = 1.0
    for i in range(n - c + 1, n + 1):
        fail *= 1.0 - k / i
    return 1.0 - fail


def pass_hat_k(n: int, c: int, k: int) -> float:
    """All ``k`` samples drawn from ``n`` pass: ``C(c, k) / C(n, k)``."""
    _check(n, c, k)
    if c < k:
        return 0.0
    return math.comb(c, k) / math.comb(n, k)


def grouped_pass_at_k(
    keys: Sequence[Hashable],
    rewards: Sequence[float | None],
    threshold: float | Sequence[float] = PASS_THRESHOLD,
) -> dict[int, float]:
    """``{k: mean pass@k over groups}`` for k up to the smallest group, where rollouts with
    equal keys (one task) form a group and a rollout passes by :func:`passes` (``threshold``:
    one for all, or each rollout's). Empty when there is no group."""
    limits = [threshold] * len(rewards) if isinstance(threshold, (int, float)) else threshold
    groups: dict[Hashable, list[bool]] = {}
    for key, reward, limit in zip(keys, rewards, limits):
        groups.setdefault(key, []).append(passes(reward, limit))
    if not groups:
        return {}
    smallest = min(len(g) for g in groups.values())
    return {
        k: sum(pass_at_k(len(g), sum(g), k) for g in groups.values()) / len(groups)
        for k in range(1, smallest + 1)
    }

"""The statistics of an evaluation: pure functions of per-sample outcomes.

- ``pass_at_k(n, c, k)``: the unbiased estimator of Chen et al. (2021), the chance that
  at least one of ``k`` samples drawn without replacement from ``n`` (``c`` of them
  passing) passes: ``1 - C(n-c, k) / C(n, k)``.
- ``pass_hat_k(n, c, k)``: the chance that all ``k`` drawn samples pass,
  ``C(c, k) / C(n, k)`` (tau-bench's pass^k).
- ``zero_variance(n, c, g)``: the chance that a GRPO group of ``g`` samples drawn without
  replacement from ``n`` (``c`` passing) is all passing or all failing, so it has no
  advantage: ``(C(c, g) + C(n-c, g)) / C(n, g)``, an unbiased estimate of ``p^g + (1-p)^g``.
- ``mean_and_se``: a mean with its standard error (sample standard deviation / sqrt(m)).
- ``bootstrap_interval``: a percentile bootstrap interval of a mean, seeded.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from orsgen.runtime.passk import pass_at_k, pass_hat_k

__all__ = [
    "bootstrap_interval",
    "interval",
    "mean_and_se",
    "pass_at_k",
    "pass_hat_k",
    "zero_variance",
]

Z95 = 1.959963984540054  # the two-sided 95% quantile of the normal distribution


def zero_variance(n: int, c: int, g: int) -> float:
    """A group of ``g`` of the ``n`` samples (``c`` passing) all pass or all fail."""
    if not 0 <= c <= n or not 1 <= g <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= g <= n, got n={n}, c={c}, g={g}")
    return (math.comb(c, g) + math.comb(n - c, g)) / math.comb(n, g)


def mean_and_se(values: Sequence[float]) -> tuple[float | None, float | None]:
    """The mean and its standard error; ``(None, None)`` for no values, SE ``None`` for one."""
    m = len(values)
    if m == 0:
        return None, None
    mean = math.fsum(values) / m
    if m == 1:
        return mean, None
    var = math.fsum((v - mean) ** 2 for v in values) / (m - 1)
    return mean, math.sqrt(var / m)


def interval(mean: float | None, se: float | None) -> list[float] | None:
    """The normal 95% interval ``mean ± 1.96 SE``, or ``None`` without an SE."""
    if mean is None or se is None:
        return None
    return [mean - Z95 * se, mean + Z95 * se]


def bootstrap_interval(
    values: Sequence[float], resamples: int = 2000, seed: int = 0
) -> list[float] | None:
    """A 95% percentile bootstrap interval of the mean of ``values`` (``None`` when empty)."""
    if not values:
        return None
    rng = random.Random(seed)
    m = len(values)
    means = sorted(math.fsum(rng.choices(values, k=m)) / m for _ in range(resamples))
    return [means[int(0.025 * (resamples - 1))], means[int(0.975 * (resamples - 1))]]

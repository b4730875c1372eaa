"""Which of a run's ``run.json`` fields say what the run *is*: the one definition of "the
same run", read by resume, merge, compare and sft/pairs. ``FACTS`` are recorded, never
compared (a requeued job gets its servers at new addresses); every other field is the run's
identity, which a resume or a merge (but for ``SHARD``) refuses to change. ``COMPARED``: what
two runs must share for their figures to compare; ``WARNED``: limits that can turn a pass
into a fail, compared with a warning; ``ONE_DATASET``: what runs share to make one dataset.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

FACTS = (
    "endpoint",
    "environment_url",
    "package",
    "package_name",
    "endpoint_counts",
    "merged",
    "partial",
)
SHARD = "shard"
COMPARED = (
    "environment",
    "split",
    "tools_sha256",
    "n",
    "max_turns",
    "pass_threshold",
    "unfinished_reward",
)
WARNED = ("max_rollout_tokens", "rollout_timeout")
ONE_DATASET = {"environment": "environments", "tools_sha256": "tool hashes"}


def identity_differences(
    before: Mapping[str, Any], now: Mapping[str, Any], allowed: Iterable[str] = ()
) -> list[str]:
    """The identity fields (all but ``FACTS`` and ``allowed``) in which two runs' configs
    differ, in ``before``'s order, then ``now``'s."""
    free = {*FACTS, *allowed}
    names = [*before, *(k for k in now if k not in before)]
    return [k for k in names if k not in free and before.get(k) != now.get(k)]


def differences(a: Mapping[str, Any], b: Mapping[str, Any], fields: Iterable[str]) -> list[str]:
    return [k for k in fields if a.get(k) != b.get(k)]

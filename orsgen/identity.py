"""Which of a run's ``run.json`` fields say what the run *is*, and which only where it went:
the one definition of "the same run", read by resume, merge, compare and sft/pairs.

- ``FACTS`` are recorded and never compared: the model's endpoint and the environment's URL
  (a requeued job gets its servers at new addresses; the model's name and the environment's
  identity are the run's), the package's location and import name, the endpoint counts, a
  merge's shards.
- Every other configuration field is the run's **identity**: a resume or a merge refuses
  any difference (a merge allows ``SHARD``, what tells its shards apart).
- ``COMPARED``: what two runs must share for their figures to compare at all (the tasks,
  the samples per task and every setting that decides pass or fail); ``WARNED``: the
  limits that can turn a pass into a fail, compared with a warning.
- ``ONE_DATASET``: what runs must share for their transcripts to make one dataset (sft,
  pairs), with what their values are called.
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
    (``EvalConfig.to_json()``) differ, in ``before``'s order, then ``now``'s."""
    free = {*FACTS, *allowed}
    names = [*before, *(k for k in now if k not in before)]
    return [k for k in names if k not in free and before.get(k) != now.get(k)]


def differences(a: Mapping[str, Any], b: Mapping[str, Any], fields: Iterable[str]) -> list[str]:
    """The names of ``fields`` whose values differ between ``a`` and ``b``."""
    return [k for k in fields if a.get(k) != b.get(k)]

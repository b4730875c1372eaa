"""summary.json from the rows of a run. Its rules are its ``rules`` (docs/evaluating.md
states them): a rollout *passes* when it has a reward >= ``pass_threshold``, and
``pass_at_k`` / ``pass_hat_k`` are per task over all ``n`` samples, failed ones as not
passing, so failures lower them and ``coverage`` says how much."""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter, defaultdict
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from orsgen.jsonobject import as_object
from orsgen.runtime.records.passk import pass_at_k, pass_hat_k
from orsgen.runtime.records.passk import passes as _passes
from orsgen.runtime.records.tools import ToolTally
from orsgen.rundir import STOPS, VERDICTS

Z95 = 1.959963984540054  # the two-sided 95% quantile of the normal distribution


def zero_variance(n: int, c: int, g: int) -> float:
    """An unbiased estimate of ``p^g + (1-p)^g`` from ``c`` passing of ``n``: the chance a
    GRPO group of ``g`` all pass or all fail (no advantage)."""
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


def wilson_interval(share: float | None, count: int) -> list[float] | None:
    """The 95% Wilson score interval of a share of ``count`` (``None`` for none). For pass@1,
    ``count`` is the tasks: a task's pass rate in [0, 1] has at most the binomial's variance,
    so the interval holds."""
    if share is None or count < 1:
        return None
    z2 = Z95 * Z95
    centre = (share + z2 / (2 * count)) / (1 + z2 / count)
    half = Z95 / (1 + z2 / count) * math.sqrt(share * (1 - share) / count + z2 / (4 * count**2))
    return [max(0.0, centre - half), min(1.0, centre + half)]


def passes(row: Mapping[str, Any], threshold: float) -> bool:
    """The one pass rule (:func:`orsgen.runtime.records.passk.passes`) on a row's reward."""
    reward = row.get("reward")
    return _passes(float(reward) if isinstance(reward, (int, float)) else None, threshold)


@dataclass(slots=True)
class _Tally:

    samples: int = 0
    scored: int = 0
    unfinished: int = 0
    failed: int = 0
    passed: int = 0
    passed_scored: int = 0
    rewards: array[float] = field(default_factory=lambda: array("d"))  # the scored ones
    prompt_tokens: int = 0  # of the rollouts with usage
    completion_tokens: int = 0
    without_usage: int = 0


def usage_figures(prompt: int, completion: int, rollouts: int, without: int) -> dict[str, Any]:
    """``usage`` of ``rollouts``, ``without`` of them with none."""
    known = rollouts - without
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "rollouts_without_usage": without,
        "prompt_tokens_per_rollout": prompt / known if known else None,
        "completion_tokens_per_rollout": completion / known if known else None,
    }


def _curve(estimator: Callable[[int, int, int], float], n: int, c: int) -> Mapping[str, float]:
    return MappingProxyType({str(k): estimator(n, c, k) for k in range(1, n + 1)})


def _task_figures(t: _Tally, curve: Callable[..., Mapping[str, float]]) -> dict[str, Any]:
    mean, se = mean_and_se(t.rewards)
    return {
        **{k: getattr(t, k) for k in ("samples", "scored", "unfinished", "failed", "passed")},
        "mean_reward": mean,
        "mean_reward_se": se,
        "pass_at_k": curve(pass_at_k, t.samples, t.passed),
        "pass_hat_k": curve(pass_hat_k, t.samples, t.passed),
        "pass_at_k_scored": curve(pass_at_k, t.scored, t.passed_scored),
        "usage": usage_figures(t.prompt_tokens, t.completion_tokens, t.samples, t.without_usage),
    }


def _averaged(per_task: Sequence[Mapping[str, Any]], key: str, n: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in range(1, n + 1):
        values = [t[key][str(k)] for t in per_task if str(k) in t[key]]
        if values:
            out[str(k)] = sum(values) / len(values)
    return out


def zero_variance_share(per_task: Sequence[Mapping[str, Any]], n: int) -> dict[str, float | None]:
    """``{"2": share, ..., "n": share}`` over the tasks with all ``n`` samples scored."""
    full = [int(t["passed"]) for t in per_task if t["samples"] == n and t["scored"] == n]
    if not full:
        return dict.fromkeys(map(str, range(2, n + 1)))
    return {str(g): sum(zero_variance(n, c, g) for c in full) / len(full) for g in range(2, n + 1)}


def no_gradient_tasks(per_task: Sequence[Mapping[str, Any]], n: int) -> list[int]:
    """The tasks, all ``n`` samples scored, that pass always or never (no GRPO gradient)."""
    full = (t for t in per_task if t["samples"] == n and t["scored"] == n)
    return [int(t["task_index"]) for t in full if int(t["passed"]) in (0, n)]


def summarize(
    rows: Iterable[Mapping[str, Any]], config: Mapping[str, Any], tools: ToolTally | None = None
) -> dict[str, Any]:
    """The summary of ``rows`` (one per (task, sample) of ``config``; ``tools``: their tool
    calls), in one pass that keeps per-task counts and rewards, never the rows."""
    n, threshold = int(config["n"]), float(config["pass_threshold"])
    unfinished_reward = config.get("unfinished_reward")
    by_task = defaultdict(_Tally, {int(i): _Tally() for i in config["task_indices"]})
    every = array("d")  # each rollout's reward, 0.0 for none
    costs, stops = array("d"), Counter[str]()
    for row in rows:
        task = by_task[int(row["task_index"])]
        verdict, reward = row["verdict"], row.get("reward")  # Any: a number when scored
        value: float | None = float(reward) if isinstance(reward, (int, float)) else None
        passed = _passes(value, threshold)  # the pass rule, as passes(row) applies it
        task.samples += 1
        task.passed += passed
        every.append(0.0 if value is None else value)
        if verdict == "scored":
            task.scored += 1
            task.passed_scored += passed
            task.rewards.append(float(row["reward"]))
        elif verdict == "unfinished":
            task.unfinished += 1
        elif verdict == "failed":
            task.failed += 1
        usage, cost = as_object(row.get("usage")), row.get("cost")
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if prompt is None or completion is None:
            task.without_usage += 1
        else:
            task.prompt_tokens += int(prompt)
            task.completion_tokens += int(completion)
        stops[str(row.get("stop"))] += 1
        if cost is not None:
            costs.append(float(cost))
    # One read-only mapping per (estimator, samples, passing), shared by every task with
    # those counts (10,000 tasks of n=10 hold 11 of each); the cache ends with this call.
    curve = functools.cache(_curve)
    per_task: list[dict[str, Any]] = [
        {"task_index": i, **_task_figures(t, curve)} for i, t in by_task.items()
    ]
    verdicts = {v: sum(getattr(t, v) for t in by_task.values()) for v in VERDICTS}
    total = len(every)
    # In task order, not row order: mean_and_se sums exactly (fsum), so the same figures.
    scored = array("d", itertools.chain.from_iterable(t.rewards for t in by_task.values()))
    mean, se = mean_and_se(scored)
    mean_all, se_all = mean_and_se(every)
    pass1 = [t["pass_at_k"]["1"] for t in per_task if "1" in t["pass_at_k"]]
    p1, p1_se = mean_and_se(pass1)
    tallies = by_task.values()
    prompt = sum(t.prompt_tokens for t in tallies)
    completion = sum(t.completion_tokens for t in tallies)
    priced = config.get("price") is not None and len(costs) > 0
    return {
        **{k: config[k] for k in config if k != "task_indices"},
        "tasks": len(per_task),
        "rollouts": total,
        "expected_rollouts": len(per_task) * n,
        "verdicts": verdicts,
        "coverage": verdicts["scored"] / total if total else 0.0,
        "mean_reward": mean,
        "mean_reward_se": se,
        "mean_reward_ci95": (
            None if mean is None or se is None else [mean - Z95 * se, mean + Z95 * se]
        ),
        "mean_reward_all": mean_all,
        "mean_reward_all_se": se_all,
        "pass_at_k": _averaged(per_task, "pass_at_k", n),
        "pass_at_1_se": p1_se,
        "pass_at_1_ci95": wilson_interval(p1, len(pass1)),
        "pass_hat_k": _averaged(per_task, "pass_hat_k", n),
        "pass_at_k_scored": _averaged(per_task, "pass_at_k_scored", n),
        "zero_variance_share": zero_variance_share(per_task, n),
        "tools": {} if tools is None else tools.figures(),
        "usage": usage_figures(prompt, completion, total, sum(t.without_usage for t in tallies)),
        "stop": {stop: stops[stop] for stop in STOPS if stops[stop]},
        "cost": math.fsum(costs) if priced else None,
        "rules": {
            "coverage": "scored rollouts / all rollouts",
            "mean_reward": "mean over scored rollouts of each rollout's reward",
            "mean_reward_all": (
                "mean over all rollouts; unfinished at unfinished_reward "
                f"({unfinished_reward}), no reward counted as 0"
            ),
            "pass": f"reward >= pass_threshold ({threshold})",
            "pass_at_k": "Chen et al. unbiased estimator per task over all n samples "
            "(failed and unfinished samples without a passing reward count as not passing), "
            "averaged over tasks",
            "pass_hat_k": "C(c,k)/C(n,k) per task (all k samples pass), averaged over tasks",
            "pass_at_k_scored": "as pass_at_k over scored samples only, tasks with >= k",
            "ci95": "mean +/- 1.96 standard errors; pass@1: the Wilson score interval over "
            "tasks",
            "zero_variance_share": "per group size G: (C(c,G)+C(n-c,G))/C(n,G) per task "
            "(c passing of n), averaged over tasks with all n samples scored",
            "tools": "per tool the model called (unknown names as _unknown): its calls, the "
            "failed ones (environment_failed: the environment or infrastructure failed; "
            "model_failed: invalid arguments, unknown tool, ...; off_recording: calls orsgen serve "
            "recorded no result for), mean and exact nearest-rank "
            "p90 seconds over all its calls",
            "usage": "the endpoint's prompt and completion tokens, summed over the rollouts "
            "whose every answer reported them (rollouts_without_usage: the others), and their "
            "means per such rollout",
            "stop": "rollouts per stop reason (why each ended), the reasons that occur",
            "cost": "sum of the rows' cost (price IN,OUT per million prompt and completion "
            "tokens); null without a price or any usage",
        },
        "per_task": per_task,
    }

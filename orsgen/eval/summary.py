"""summary.json from the rows of a run.

Rules (also in the README):

- ``coverage``: scored rollouts / all (task, sample) pairs.
- ``mean_reward``: the mean over scored rollouts of each rollout's reward (one value per
  rollout, never per turn), with its standard error and a normal 95% interval.
- ``mean_reward_all``: the mean over every rollout, unfinished ones at their
  ``unfinished_reward`` and everything else without a reward counted as 0.
- A rollout *passes* when it has a reward ≥ ``pass_threshold`` (an unfinished rollout can
  pass only through ``unfinished_reward``). ``pass_at_k`` / ``pass_hat_k`` are per task,
  over all its ``n`` samples, failed ones as not passing, then averaged over tasks; so
  failures lower them and ``coverage`` says how much. ``pass_at_k_scored`` uses only the
  scored samples of tasks with at least ``k`` of them.
- ``zero_variance_share``: for each GRPO group size G in 2..n, the expected share of groups
  of G rollouts of a uniformly chosen task that all pass or all fail (no gradient): per
  task ``(C(c, G) + C(n - c, G)) / C(n, G)``, averaged over the tasks whose n samples were
  all scored (``None`` when there is none).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from orsgen.runtime.passk import passes as _passes
from orsgen.eval.estimators import interval, mean_and_se, pass_at_k, pass_hat_k, zero_variance


def passes(row: Mapping[str, Any], threshold: float) -> bool:
    """The one pass rule (:func:`orsgen.runtime.passk.passes`) on a row's reward (an
    unfinished row's is its ``unfinished_reward``)."""
    reward = row.get("reward")
    return _passes(float(reward) if isinstance(reward, (int, float)) else None, threshold)


def _task_figures(rows: Sequence[Mapping[str, Any]], n: int, threshold: float) -> dict[str, Any]:
    scored = [r for r in rows if r["verdict"] == "scored"]
    c = sum(passes(r, threshold) for r in rows)
    c_scored = sum(passes(r, threshold) for r in scored)
    rewards = [float(r["reward"]) for r in scored]
    mean, se = mean_and_se(rewards)
    return {
        "samples": len(rows),
        "scored": len(scored),
        "unfinished": sum(r["verdict"] == "unfinished" for r in rows),
        "failed": sum(r["verdict"] == "failed" for r in rows),
        "passed": c,
        "mean_reward": mean,
        "mean_reward_se": se,
        "pass_at_k": {_key(k): pass_at_k(len(rows), c, k) for k in range(1, len(rows) + 1)},
        "pass_hat_k": {_key(k): pass_hat_k(len(rows), c, k) for k in range(1, len(rows) + 1)},
        "pass_at_k_scored": {
            _key(k): pass_at_k(len(scored), c_scored, k) for k in range(1, len(scored) + 1)
        },
    }


@functools.cache
def _key(k: int) -> str:
    """``str(k)``, one string shared by every task's figures (10,000 tasks hold 30 each)."""
    return str(k)


def _averaged(per_task: Sequence[Mapping[str, Any]], key: str, n: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in range(1, n + 1):
        values = [t[key][str(k)] for t in per_task if str(k) in t[key]]
        if values:
            out[str(k)] = sum(values) / len(values)
    return out


def zero_variance_share(per_task: Sequence[Mapping[str, Any]], n: int) -> dict[str, float | None]:
    """``{"2": share, ..., "n": share}`` over the tasks with all ``n`` samples scored."""
    full = [t for t in per_task if t["samples"] == n and t["scored"] == n]
    return {
        str(g): (
            sum(zero_variance(n, int(t["passed"]), g) for t in full) / len(full) if full else None
        )
        for g in range(2, n + 1)
    }


def no_gradient_tasks(per_task: Sequence[Mapping[str, Any]], n: int) -> list[int]:
    """The tasks, all ``n`` samples scored, that pass always or never: a GRPO group of
    ``n`` rollouts of one of them has no gradient."""
    return [
        int(t["task_index"])
        for t in per_task
        if t["samples"] == n and t["scored"] == n and int(t["passed"]) in (0, n)
    ]


def summarize(rows: Sequence[Mapping[str, Any]], config: Mapping[str, Any]) -> dict[str, Any]:
    """The summary of ``rows`` (one per (task, sample) of ``config``)."""
    n, threshold = int(config["n"]), float(config["pass_threshold"])
    unfinished_reward = config.get("unfinished_reward")
    by_task: dict[int, list[Mapping[str, Any]]] = {i: [] for i in config["task_indices"]}
    for row in rows:
        by_task.setdefault(int(row["task_index"]), []).append(row)
    per_task: list[dict[str, Any]] = []
    for index, task_rows in by_task.items():
        ordered = sorted(task_rows, key=lambda r: int(r["sample"]))
        per_task.append({"task_index": index, **_task_figures(ordered, n, threshold)})
    total = len(rows)
    scored = [float(r["reward"]) for r in rows if r["verdict"] == "scored"]
    every = [float(r["reward"]) if isinstance(r.get("reward"), (int, float)) else 0.0 for r in rows]
    mean, se = mean_and_se(scored)
    mean_all, se_all = mean_and_se(every)
    pass1 = [t["pass_at_k"]["1"] for t in per_task if "1" in t["pass_at_k"]]
    p1, p1_se = mean_and_se(pass1)
    verdicts = {v: sum(r["verdict"] == v for r in rows) for v in ("scored", "unfinished", "failed")}
    return {
        **{k: config[k] for k in config if k != "task_indices"},
        "tasks": len(by_task),
        "rollouts": total,
        "expected_rollouts": len(by_task) * n,
        "verdicts": verdicts,
        "coverage": len(scored) / total if total else 0.0,
        "mean_reward": mean,
        "mean_reward_se": se,
        "mean_reward_ci95": interval(mean, se),
        "mean_reward_all": mean_all,
        "mean_reward_all_se": se_all,
        "pass_at_k": _averaged(per_task, "pass_at_k", n),
        "pass_at_1_se": p1_se,
        "pass_at_1_ci95": interval(p1, p1_se),
        "pass_hat_k": _averaged(per_task, "pass_hat_k", n),
        "pass_at_k_scored": _averaged(per_task, "pass_at_k_scored", n),
        "zero_variance_share": zero_variance_share(per_task, n),
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
            "ci95": "mean +/- 1.96 standard errors (pass@1: over tasks)",
            "zero_variance_share": "per group size G: (C(c,G)+C(n-c,G))/C(n,G) per task "
            "(c passing of n), averaged over tasks with all n samples scored",
        },
        "per_task": per_task,
    }

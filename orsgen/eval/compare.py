"""``orsgen eval --compare RUN_A RUN_B``: did B do better than A on the same tasks?
Tasks without a scored rollout in one run drop out of the reward difference; a task *flips*
when its pass@1 is below 0.5 in one run and at least 0.5 in the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orsgen.eval.summary import bootstrap_interval
from orsgen.eval.results import RunFileError, shortened
from orsgen.rundir import RUN_FILE, RunDirError, read_json, read_summary

MUST_MATCH = ("environment", "split", "tools_sha256", "n", "max_turns", "pass_threshold")


def load_summary(run: Path) -> dict[str, Any]:
    """The ``summary.json`` of a run directory (given as the directory, its run.json, or that
    file); :class:`RunFileError` if none."""
    run = run.parent if run.name == RUN_FILE else run
    try:
        return read_summary(run) if run.is_dir() else read_json(run)
    except RunDirError as exc:
        raise RunFileError(str(exc)) from None


def compare(
    a: Mapping[str, Any], b: Mapping[str, Any], seed: int = 0, force: bool = False
) -> dict[str, Any]:
    """Two runs' summaries on the tasks both evaluated: the mean per-task difference B - A in
    pass@1 and in mean reward, each with a seeded 95% bootstrap interval over tasks, and the
    tasks that flipped. Runs that differ in a ``MUST_MATCH`` field (what makes their figures
    comparable) raise :class:`RunFileError` unless ``force`` (the difference shown first)."""
    differs = [k for k in MUST_MATCH if a.get(k) != b.get(k)]
    if differs and not force:
        key = differs[0]
        was, now = (shortened(run.get(key), 40) for run in (a, b))
        raise RunFileError(
            f"the runs differ in {key} ({was} and {now}), so "
            "their figures do not compare; pass --force to compare them anyway"
        )
    tasks_a = {int(t["task_index"]): t for t in a["per_task"]}
    tasks_b = {int(t["task_index"]): t for t in b["per_task"]}
    common = sorted(set(tasks_a) & set(tasks_b))
    if not common:
        raise RunFileError("the two runs share no task")
    p1 = {i: (tasks_a[i]["pass_at_k"]["1"], tasks_b[i]["pass_at_k"]["1"]) for i in common}
    d_pass = [y - x for x, y in p1.values()]
    rewards = [(tasks_a[i]["mean_reward"], tasks_b[i]["mean_reward"]) for i in common]
    d_reward = [y - x for x, y in rewards if x is not None and y is not None]
    return {
        "a": {"model": a.get("model"), "coverage": a.get("coverage")},
        "b": {"model": b.get("model"), "coverage": b.get("coverage")},
        "differs": differs,
        "tasks": len(common),
        "pass_at_1_diff": sum(d_pass) / len(d_pass),
        "pass_at_1_diff_ci95": bootstrap_interval(d_pass, seed=seed),
        "mean_reward_diff": sum(d_reward) / len(d_reward) if d_reward else None,
        "mean_reward_diff_ci95": bootstrap_interval(d_reward, seed=seed),
        "reward_tasks": len(d_reward),
        "gained": [i for i, (x, y) in p1.items() if x < 0.5 <= y],
        "lost": [i for i, (x, y) in p1.items() if y < 0.5 <= x],
        "per_task": [
            {"task_index": i, "pass_at_1_a": x, "pass_at_1_b": y} for i, (x, y) in p1.items()
        ],
    }


def _num(x: Any) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def _ci(pair: Any) -> str:
    return "n/a" if not pair else f"[{pair[0]:+.3f}, {pair[1]:+.3f}]"


def format_comparison(c: Mapping[str, Any]) -> str:
    """The lines ``orsgen eval --compare`` prints for a :func:`compare` result."""
    lines = [
        f"A: {c['a']['model']} (coverage {c['a']['coverage']:.3f})",
        f"B: {c['b']['model']} (coverage {c['b']['coverage']:.3f})",
        f"{c['tasks']} tasks in both runs",
        f"pass@1 B-A: {_num(c['pass_at_1_diff'])} (95% bootstrap {_ci(c['pass_at_1_diff_ci95'])})",
        f"mean reward B-A: {_num(c['mean_reward_diff'])} "
        f"(95% bootstrap {_ci(c['mean_reward_diff_ci95'])}, {c['reward_tasks']} tasks scored in both)",
        f"flipped to passing: {c['gained'] or 'none'}",
        f"flipped to failing: {c['lost'] or 'none'}",
    ]
    if c["differs"]:
        lines.insert(0, f"warning: the runs differ in {', '.join(c['differs'])}")
    return "\n".join(lines)

"""report.md beside the results, with two PNGs: pass rate per task (past ``MAX_BARS``
tasks, a histogram of the tasks' pass rates) and the reward histogram (matplotlib, Agg
backend: no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPORT_FILE = "report.md"
PASS_PNG = "pass_rate.png"
REWARD_PNG = "rewards.png"
MAX_BARS = 50  # tasks shown one bar each; past this, a histogram of their pass rates


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _plots(out: Path, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> bool:
    """Write the PNGs; ``False`` when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
    except ImportError:
        return False
    plt: Any = pyplot  # matplotlib's annotations leave parts of its API unknown
    per_task = summary["per_task"]
    rates = [t["pass_at_k"].get("1", 0.0) for t in per_task]
    if len(per_task) > MAX_BARS:  # one bar per task stops being readable: how rates spread
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.hist(rates, bins=20, range=(0.0, 1.0))
        ax.set_xlabel("pass@1")
        ax.set_ylabel("tasks")
        ax.set_title(f"pass@1 of {len(per_task)} tasks (n={summary['n']}, {summary['split']!r})")
    else:
        fig, ax = plt.subplots(figsize=(max(4.0, 0.3 * len(per_task) + 2), 3))
        ax.bar([str(t["task_index"]) for t in per_task], rates)
        ax.set_ylim(0, 1)
        ax.set_xlabel("task")
        ax.set_ylabel("pass@1")
        ax.set_title(f"pass@1 per task (n={summary['n']}, split {summary['split']!r})")
    fig.tight_layout()
    fig.savefig(out / PASS_PNG, dpi=80)
    plt.close(fig)
    rewards = [float(r["reward"]) for r in rows if r["verdict"] == "scored"]
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.hist(rewards, bins=20)
    ax.set_xlabel("reward (scored rollouts)")
    ax.set_ylabel("rollouts")
    fig.tight_layout()
    fig.savefig(out / REWARD_PNG, dpi=80)
    plt.close(fig)
    return True


def write(out: Path, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> None:
    plotted = _plots(out, summary, rows)
    v = summary["verdicts"]
    lines = [
        f"# Evaluation of {summary['model']} on {summary['environment']} ({summary['split']})",
        "",
        f"- endpoint: {summary['endpoint']}; adapter {summary['adapter']} "
        f"{summary['adapter_version']}, tools {str(summary['tools_sha256'])[:12]}",
        f"- {summary['tasks']} tasks x n={summary['n']}: {summary['rollouts']} rollouts "
        f"({v['scored']} scored, {v['unfinished']} unfinished, {v['failed']} failed)",
        f"- coverage {_fmt(summary['coverage'])}; mean reward {_fmt(summary['mean_reward'])} "
        f"(95% CI {_ci(summary['mean_reward_ci95'])}, scored rollouts)",
        f"- pass@1 {_fmt(summary['pass_at_k'].get('1'))} (95% CI {_ci(summary['pass_at_1_ci95'])})",
        "",
        "| k | pass@k | pass^k |",
        "|---|---|---|",
    ]
    for k, value in summary["pass_at_k"].items():
        lines.append(f"| {k} | {_fmt(value)} | {_fmt(summary['pass_hat_k'].get(k))} |")
    if plotted:
        what = "pass@1 per task" if len(summary["per_task"]) <= MAX_BARS else "pass@1 of the tasks"
        lines += ["", f"![{what}]({PASS_PNG})", "", f"![rewards]({REWARD_PNG})"]
    reasons: dict[str, int] = {}
    for row in rows:
        if row["verdict"] != "scored":
            key = f"{row['verdict']}: {str(row.get('reason'))[:120]}"
            reasons[key] = reasons.get(key, 0) + 1
    if reasons:
        lines += ["", "## Unscored rollouts", ""]
        lines += [f"- {count} x {why}" for why, count in sorted(reasons.items())]
    (out / REPORT_FILE).write_text("\n".join(lines) + "\n")


def _ci(pair: Any) -> str:
    return "n/a" if not pair else f"{pair[0]:.3f} to {pair[1]:.3f}"

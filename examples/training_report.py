"""What a GRPO run did, step by step: reward, scoring coverage and gradient norm, as a
table and as a PNG plot (examples/train_echo.py prints and writes them); and task by task:
the per-task table orsgen's ``TaskTableCallback`` writes (``ors_tasks.csv``), printed and
plotted as pass rate per task.

Scoring coverage is the fraction of a step's rollouts whose reward is not ``None``.
TRL's ``reward`` and ``rewards/<name>/mean`` are NaN-means, so they cannot show it; the
orsgen runtime logs it as ``ors/scored_frac`` through the generated reward function, and
that logged figure is the only one shown here.

Usage::

    trainer = GRPOTrainer(..., reward_funcs=outcome_reward)
    trainer.train()
    rows = step_rows(trainer.state.log_history)
    print(format_table(rows))
    write_plot(rows, out_dir / "reward.png")

    tasks = read_task_table(out_dir / "ors_tasks.csv")   # TaskTableCallback's file
    print(format_task_table(tasks, names={0: "apple", 1: "banana"}))
    write_task_plot(tasks, out_dir / "tasks.png", names={0: "apple", 1: "banana"})
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import Any

# The key the orsgen runtime logs coverage under, through the generated reward function.
SCORED_FRAC = "ors/scored_frac"


@dataclass(frozen=True)
class StepRow:
    """One training step, as the table and the plot show it."""

    step: int
    reward_mean: float
    reward_std: float
    coverage: float | None
    grad_norm: float


def step_rows(
    log_history: Sequence[Mapping[str, Any]], reward_name: str = "outcome_reward"
) -> list[StepRow]:
    """The trainer's per-step log entries (those that carry the reward), as rows."""
    mean_key, std_key = f"rewards/{reward_name}/mean", f"rewards/{reward_name}/std"
    return [
        StepRow(
            step=int(entry["step"]),
            reward_mean=float(entry[mean_key]),
            reward_std=float(entry.get(std_key, math.nan)),
            coverage=float(entry[SCORED_FRAC]) if SCORED_FRAC in entry else None,
            grad_norm=float(entry.get("grad_norm", math.nan)),
        )
        for entry in log_history
        if mean_key in entry
    ]


def _fmt(value: float | None, digits: int) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


HEADER = f"{'step':>4}  {'reward mean':>11}  {'reward std':>10}  {'scored':>6}  {'grad norm':>9}"


def format_row(r: StepRow) -> str:
    """One step as a line of the table (printed as each step is logged, too)."""
    return (
        f"{r.step:>4}  {_fmt(r.reward_mean, 3):>11}  {_fmt(r.reward_std, 3):>10}  "
        f"{_fmt(r.coverage, 2):>6}  {_fmt(r.grad_norm, 4):>9}"
    )


def format_table(rows: Sequence[StepRow]) -> str:
    """A fixed-width table, one line per step."""
    return "\n".join([HEADER, *(format_row(r) for r in rows)])


def _mean(values: Sequence[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


def summary(rows: Sequence[StepRow], window: int = 5) -> dict[str, float]:
    """The figures a reader checks: mean reward over the first and the last ``window``
    steps, and on how many steps the gradient was not zero."""
    rewards = [r.reward_mean for r in rows]
    return {
        "window": float(window),
        "steps": float(len(rows)),
        "first_reward": _mean(rewards[:window]),
        "last_reward": _mean(rewards[-window:]),
        "nonzero_grad_steps": float(sum(r.grad_norm > 0 for r in rows)),
        "max_grad_norm": max(
            (r.grad_norm for r in rows if not math.isnan(r.grad_norm)), default=0.0
        ),
        "min_coverage": min((r.coverage for r in rows if r.coverage is not None), default=math.nan),
    }


def write_csv(rows: Sequence[StepRow], path: Path) -> None:
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow([f.name for f in fields(StepRow)])
        writer.writerows(astuple(r) for r in rows)


def write_plot(
    rows: Sequence[StepRow], path: Path, title: str = "GRPO on the echo environment"
) -> None:
    """Mean reward and scoring coverage per step above, grad norm below. Needs
    matplotlib (the dev extra); draws off-screen."""
    import matplotlib

    matplotlib.use("Agg")  # no display here, and no GUI toolkit needed
    import matplotlib.pyplot as plt

    steps = [r.step for r in rows]
    coverage = [math.nan if r.coverage is None else r.coverage for r in rows]
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(7, 4.8), sharex=True, gridspec_kw={"height_ratios": [2, 1]}
    )
    top.plot(steps, [r.reward_mean for r in rows], marker="o", markersize=3, label="reward mean")
    top.plot(steps, coverage, linestyle="--", label="scoring coverage")
    top.set_ylim(-0.05, 1.05)
    top.set_ylabel("per step")
    top.legend(loc="lower right", fontsize=8)
    top.set_title(title)
    bottom.bar(steps, [r.grad_norm for r in rows], color="tab:gray")
    bottom.set_ylabel("grad norm")
    bottom.set_xlabel("step")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


@dataclass(frozen=True)
class TaskRow:
    """One task of the per-task table (``ors_tasks.csv``): its rollouts, the scored ones
    among them, the pass rate and mean reward over the scored ones (``None`` when none
    scored), and the last step that trained on it."""

    split: str
    task_index: int | None
    rollouts: int
    scored: int
    pass_rate: float | None
    mean_reward: float | None
    last_step: int | None


def _optional(cell: str, kind: type[Any]) -> Any:
    return None if cell == "" else kind(cell)


def read_task_table(path: Path) -> list[TaskRow]:
    """The per-task table as TaskTableCallback wrote it (its empty cells as ``None``)."""
    with path.open(newline="") as f:
        return [
            TaskRow(
                split=row["split"],
                task_index=_optional(row["task_index"], int),
                rollouts=int(row["rollouts"]),
                scored=int(row["scored"]),
                pass_rate=_optional(row["pass_rate"], float),
                mean_reward=_optional(row["mean_reward"], float),
                last_step=_optional(row["last_step"], int),
            )
            for row in csv.DictReader(f)
        ]


def task_label(row: TaskRow, names: Mapping[int, str] | None = None) -> str:
    """``3 damson``: the task index, and its name when ``names`` has one."""
    index = "-" if row.task_index is None else str(row.task_index)
    name = (names or {}).get(row.task_index) if row.task_index is not None else None
    return f"{index} {name}" if name else index


TASK_HEADER = (
    f"{'task':<12}  {'split':<5}  {'rollouts':>8}  {'scored':>6}  {'pass rate':>9}  "
    f"{'last step':>9}"
)


def format_task_table(rows: Sequence[TaskRow], names: Mapping[int, str] | None = None) -> str:
    """A fixed-width table, one line per task; the pass rate is over scored rollouts."""
    lines = [TASK_HEADER]
    for r in rows:
        last = "-" if r.last_step is None else str(r.last_step)
        lines.append(
            f"{task_label(r, names):<12}  {r.split:<5}  {r.rollouts:>8}  {r.scored:>6}  "
            f"{_fmt(r.pass_rate, 3):>9}  {last:>9}"
        )
    return "\n".join(lines)


def write_task_plot(
    rows: Sequence[TaskRow],
    path: Path,
    names: Mapping[int, str] | None = None,
    title: str = "Pass rate per task over the GRPO run",
) -> None:
    """A bar per task: its pass rate over the run's scored rollouts, with the rollouts
    behind it written on the bar. Needs matplotlib; draws off-screen."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [task_label(r, names) for r in rows]
    rates = [math.nan if r.pass_rate is None else r.pass_rate for r in rows]
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(rows) + 1.5), 3.2))
    bars = ax.bar(labels, [0.0 if math.isnan(v) else v for v in rates], color="tab:green")
    for bar, row, rate in zip(bars, rows, rates):
        shown = "no score" if math.isnan(rate) else f"{rate:.2f}"
        ax.annotate(
            f"{shown}\n{row.scored}/{row.rollouts} scored",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax.set_ylim(0, 1.25)
    ax.set_ylabel("pass rate (scored rollouts)")
    ax.set_xlabel("task")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)

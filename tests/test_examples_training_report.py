"""examples/training_report.py: the demo's per-step table and plot, with its scoring
coverage read from the runtime's ors/scored_frac in the trainer's log, and nothing else.
No training here: tests/test_e2e_grpo.py runs the demo's training path."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import training_report as report  # examples/, on sys.path via conftest


def test_coverage_is_the_logged_figure_only() -> None:
    assert not hasattr(report, "ScoringCount")  # no count of its own that could hide a gap
    rows = report.step_rows(_log())
    assert [r.coverage for r in rows] == [None, 0.5]


def _log() -> list[dict[str, Any]]:
    return [
        {"step": 1, "rewards/outcome_reward/mean": 0.25, "rewards/outcome_reward/std": 0.5,
         "grad_norm": 0.9},
        {"step": 2, "rewards/outcome_reward/mean": 1.0, "rewards/outcome_reward/std": 0.0,
         "grad_norm": 0.0, report.SCORED_FRAC: 0.5},
        {"train_runtime": 3.0, "step": 2},  # the trainer's closing entry carries no reward
    ]  # fmt: skip


def test_rows_table_and_summary() -> None:
    rows = report.step_rows(_log())
    assert rows == [
        report.StepRow(step=1, reward_mean=0.25, reward_std=0.5, coverage=None, grad_norm=0.9),
        report.StepRow(step=2, reward_mean=1.0, reward_std=0.0, coverage=0.5, grad_norm=0.0),
    ]
    lines = report.format_table(rows).splitlines()
    assert lines[0].split() == ["step", "reward", "mean", "reward", "std", "scored", "grad", "norm"]
    # A step whose log holds no coverage shows "-", not a made-up number.
    assert lines[1].split() == ["1", "0.250", "0.500", "-", "0.9000"]
    assert lines[2].split() == ["2", "1.000", "0.000", "0.50", "0.0000"]
    # The live line of a step is the table's line.
    assert [report.HEADER, *map(report.format_row, rows)] == lines
    figures = report.summary(rows, window=1)
    assert (figures["first_reward"], figures["last_reward"]) == (0.25, 1.0)
    assert figures["nonzero_grad_steps"] == 1
    assert math.isnan(report.summary([])["first_reward"])


def test_csv_and_plot_are_written(tmp_path: Path) -> None:
    rows = report.step_rows(_log())
    report.write_csv(rows, tmp_path / "steps.csv")
    assert (tmp_path / "steps.csv").read_text().splitlines() == [
        "step,reward_mean,reward_std,coverage,grad_norm",
        "1,0.25,0.5,,0.9",
        "2,1.0,0.0,0.5,0.0",
    ]
    report.write_plot(rows, tmp_path / "reward.png")
    png = (tmp_path / "reward.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n"), png[:8]
    # 7 x 4.8 inches at 100 dpi (the PNG header's width and height).
    assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (700, 480)


def _task_table_file(tmp_path: Path) -> Path:
    """A per-task table written by orsgen's own writer (what TaskTableCallback writes)."""
    from orsgen.runtime.records.episode import Outcome
    from orsgen.runtime.trajectories.task_table import TaskTable

    table = TaskTable()
    for reward, step in [(1.0, 1), (0.0, 1), (1.0, 2), (1.0, 3)]:
        table.add(("train", 0), Outcome(reward, "scored"), step)
    table.add(("train", 2), Outcome(None, "unfinished", "no tool call"), 2)
    table.add(("train", 2), Outcome(0.0, "scored"), 3)
    table.add(("train", 3), Outcome(None, "failed", "environment: lost"), 1)
    path = tmp_path / "ors_tasks.csv"
    table.write(path)
    return path


def test_the_task_table_reads_prints_and_plots(tmp_path: Path) -> None:
    rows = report.read_task_table(_task_table_file(tmp_path))
    assert rows == [
        report.TaskRow("train", 0, rollouts=4, scored=4, pass_rate=0.75, mean_reward=0.75,
                       last_step=3),
        report.TaskRow("train", 2, rollouts=2, scored=1, pass_rate=0.0, mean_reward=0.0,
                       last_step=3),
        # Nothing scored: no pass rate, not a made-up 0.
        report.TaskRow("train", 3, rollouts=1, scored=0, pass_rate=None, mean_reward=None,
                       last_step=1),
    ]  # fmt: skip
    lines = report.format_task_table(rows, {0: "apple", 2: "cherry"}).splitlines()
    assert lines[0].split() == [
        "task",
        "split",
        "rollouts",
        "scored",
        "pass",
        "rate",
        "last",
        "step",
    ]
    assert [line.split() for line in lines[1:]] == [
        ["0", "apple", "train", "4", "4", "0.750", "3"],
        ["2", "cherry", "train", "2", "1", "0.000", "3"],
        ["3", "train", "1", "0", "-", "1"],
    ]
    report.write_task_plot(rows, tmp_path / "tasks.png", {0: "apple"})
    png = (tmp_path / "tasks.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n"), png[:8]

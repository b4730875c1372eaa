"""examples/training_report.py: the demo's per-step table and plot, and where its scoring
coverage comes from (the runtime's ors/scored_frac when logged, else its own count).
No training here: tests/test_e2e_grpo.py runs the demo's training path."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import training_report as report  # examples/, on sys.path via conftest


def _rewards(values: list[float | None]) -> Any:
    def outcome_reward(environments: Any = None, **kwargs: Any) -> list[float | None]:
        return list(values)

    return outcome_reward


def test_scoring_count_passes_rewards_through_and_counts_per_step() -> None:
    counted = report.ScoringCount(_rewards([1.0, None, 0.0, None]))
    assert counted.__name__ == "outcome_reward"  # TRL logs rewards/<name>/mean
    # TRL computes step N's rewards while trainer_state.global_step is N - 1.
    assert counted(trainer_state=SimpleNamespace(global_step=0)) == [1.0, None, 0.0, None]
    counted(trainer_state=SimpleNamespace(global_step=1))
    counted(trainer_state=SimpleNamespace(global_step=1))
    assert counted.coverage() == {1: 0.5, 2: 0.5}
    all_scored = report.ScoringCount(_rewards([0.0, -1.0]))  # 0.0 and negatives are scores
    all_scored(trainer_state=SimpleNamespace(global_step=4))
    assert all_scored.coverage() == {5: 1.0}


def test_scoring_coverage_prefers_the_runtime_metric_and_falls_back_to_the_count() -> None:
    counted = {1: 0.25, 2: 1.0}
    assert report.scoring_coverage({"step": 1, report.SCORED_FRAC: 0.75}, counted) == 0.75
    assert report.scoring_coverage({"step": 1}, counted) == 0.25
    assert report.scoring_coverage({"step": 3}, counted) is None


def _log() -> list[dict[str, Any]]:
    return [
        {"step": 1, "rewards/outcome_reward/mean": 0.25, "rewards/outcome_reward/std": 0.5,
         "grad_norm": 0.9},
        {"step": 2, "rewards/outcome_reward/mean": 1.0, "rewards/outcome_reward/std": 0.0,
         "grad_norm": 0.0, report.SCORED_FRAC: 0.5},
        {"train_runtime": 3.0, "step": 2},  # the trainer's closing entry carries no reward
    ]  # fmt: skip


def test_rows_table_and_summary() -> None:
    rows = report.step_rows(_log(), {1: 0.75})
    assert rows == [
        report.StepRow(step=1, reward_mean=0.25, reward_std=0.5, coverage=0.75, grad_norm=0.9),
        report.StepRow(step=2, reward_mean=1.0, reward_std=0.0, coverage=0.5, grad_norm=0.0),
    ]
    lines = report.format_table(rows).splitlines()
    assert lines[0].split() == ["step", "reward", "mean", "reward", "std", "scored", "grad", "norm"]
    assert lines[1].split() == ["1", "0.250", "0.500", "0.75", "0.9000"]
    assert lines[2].split() == ["2", "1.000", "0.000", "0.50", "0.0000"]
    # A step nobody counted shows as "-", not as a made-up number.
    uncounted = report.step_rows(_log()[:1], {})
    assert report.format_table(uncounted).splitlines()[1].split()[3] == "-"
    figures = report.summary(rows, window=1)
    assert (figures["first_reward"], figures["last_reward"]) == (0.25, 1.0)
    assert figures["nonzero_grad_steps"] == 1
    assert math.isnan(report.summary([])["first_reward"])


def test_csv_and_plot_are_written(tmp_path: Path) -> None:
    rows = report.step_rows(_log(), {1: 0.75})
    report.write_csv(rows, tmp_path / "steps.csv")
    assert (tmp_path / "steps.csv").read_text().splitlines() == [
        "step,reward_mean,reward_std,coverage,grad_norm",
        "1,0.25,0.5,0.75,0.9",
        "2,1.0,0.0,0.5,0.0",
    ]
    report.write_plot(rows, tmp_path / "reward.png")
    png = (tmp_path / "reward.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n"), png[:8]
    # 7 x 4.8 inches at 100 dpi (the PNG header's width and height).
    assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (700, 480)

"""report.md: the per-task table, and plots a reader can read (value and task labels, the
model in the title, a readable size; zero bars visible). Built from rows the test wrote
with :func:`orsgen.eval.summary.summarize`, so no model or server is needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from PIL import Image  # noqa: E402

from orsgen.eval import report  # noqa: E402
from orsgen.eval.summary import summarize  # noqa: E402


def _rows(rewards: dict[int, list[float | None]]) -> list[dict[str, Any]]:
    rows = []
    for task, values in rewards.items():
        for sample, reward in enumerate(values):
            verdict = "scored" if reward is not None else "failed"
            rows.append(
                {
                    "task_index": task,
                    "sample": sample,
                    "reward": reward,
                    "verdict": verdict,
                    "reason": None if reward is not None else "environment: HTTP 503",
                }
            )
    return rows


def _summary(rows: list[dict[str, Any]], tasks: list[int], n: int) -> dict[str, Any]:
    config = {
        "model": "tiny-test-model",
        "endpoint": "http://127.0.0.1:1/v1",
        "environment": "chance",
        "adapter": "ChanceEnv",
        "adapter_version": "0.1.0",
        "tools_sha256": "ab" * 32,
        "split": "test",
        "n": n,
        "task_indices": tasks,
        "pass_threshold": 1.0,
        "unfinished_reward": None,
    }
    return summarize(rows, config)


def test_the_report_has_a_per_task_table(tmp_path: Path) -> None:
    rows = _rows({0: [1.0, 0.0], 1: [None, 0.5], 2: [1.0, 1.0]})
    summary = _summary(rows, [0, 1, 2], 2)
    report.write(tmp_path, summary, rows)
    text = (tmp_path / "report.md").read_text()
    assert (
        "| task | samples | scored | unfinished | failed | passed | pass@1 | mean reward |" in text
    )
    assert "| task 0 | 2 | 2 | 0 | 1 | 1 | 0.500 | 0.500 |" not in text  # task 0 did not fail
    assert "| task 0 | 2 | 2 | 0 | 0 | 1 | 0.500 | 0.500 |" in text
    assert "| task 1 | 2 | 1 | 0 | 1 | 0 | 0.000 | 0.500 |" in text
    assert "| task 2 | 2 | 2 | 0 | 0 | 2 | 1.000 | 1.000 |" in text
    for png in (report.PASS_PNG, report.REWARD_PNG):
        width, height = Image.open(tmp_path / png).size
        assert width >= 600 and height >= 400  # was 320x240


def test_the_pass_plot_labels_values_and_tasks_and_names_the_model() -> None:
    rows = _rows({3: [1.0, 0.0], 7: [0.0, 0.0]})
    fig = report.pass_figure(plt, _summary(rows, [3, 7], 2))
    ax = fig.axes[0]
    assert "tiny-test-model" in ax.get_title()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["task 3", "task 7"]
    assert sorted(t.get_text() for t in ax.texts) == ["0.00", "0.50"]
    plt.close(fig)
    fig = report.reward_figure(plt, _summary(rows, [3, 7], 2), rows)
    assert "tiny-test-model" in fig.axes[0].get_title()
    assert sorted(t.get_text() for t in fig.axes[0].texts if t.get_text()) == ["1", "3"]
    plt.close(fig)


def _blue_pixels(path: Path) -> int:
    """Pixels of the bars' colour (matplotlib's C0, #1f77b4)."""
    image = Image.open(path).convert("RGB")
    data: Any = (
        image.get_flattened_data() if hasattr(image, "get_flattened_data") else image.getdata()
    )
    return sum(
        1 for r, g, b in data if abs(r - 0x1F) < 12 and abs(g - 0x77) < 12 and abs(b - 0xB4) < 12
    )


def test_an_all_zero_pass_plot_still_shows_its_bars(tmp_path: Path) -> None:
    rows = _rows({0: [0.0, 0.0], 1: [0.0, 0.5], 2: [0.0, 0.0]})
    summary = _summary(rows, [0, 1, 2], 2)
    report.write(tmp_path, summary, rows)
    assert _blue_pixels(tmp_path / report.PASS_PNG) > 3 * 40  # three visible zero bars

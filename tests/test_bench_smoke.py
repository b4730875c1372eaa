"""The benchmark runs end to end with tiny parameters (no timing asserts: benchmarks
are not tests). Checks the outputs exist and the structural figures hold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_bench(script: str, args: list[str], timeout: float) -> None:
    """Run ``bench/<script>`` with ``args`` from the repository root; it must succeed."""
    child = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert child.returncode == 0, child.stdout[-2000:] + child.stderr[-4000:]


@pytest.mark.slow
def test_bench_runs_with_tiny_parameters(tmp_path: Path) -> None:
    run_bench(
        "run.py",
        [
            "--tasks",
            "20",
            "--calls",
            "10",
            "--setup-delay",
            "0.2",
            "--group",
            "3",
            "--k",
            "3",
            "--rollout-calls",
            "1",
            "--out",
            str(tmp_path),
        ],
        timeout=300,
    )
    data = json.loads((tmp_path / "latest.json").read_text())
    md = (tmp_path / "latest.md").read_text()
    assert data["meta"]["machine"] and data["meta"]["date"] in md
    gen = lambda section: next(
        r for r in data[section] if r["impl"].startswith("orsgen")
    )  # noqa: E731
    assert gen("dataset")["requests"] <= 2
    assert gen("tool_call")["requests_per_call"] == 1.0
    assert gen("leaks") == {
        "impl": "orsgen adapter",
        "after_close": 0,
        "after_gc": 0,
        "after_exit": 0,
    }
    assert "| target | goal | measured | met |" in md


@pytest.mark.slow
def test_capacity_bench_runs_with_tiny_parameters(tmp_path: Path) -> None:
    """bench/capacity.py: 8 rollouts against a 2-session limit with random refusals."""
    run_bench(
        "capacity.py",
        [
            "--rollouts",
            "8",
            "--limit",
            "2",
            "--refuse",
            "0.1",
            "--setup-delay",
            "0.1",
            "--tool-latency",
            "0.1",
            "--out",
            str(tmp_path),
        ],
        timeout=600,
    )
    data = json.loads((tmp_path / "capacity.json").read_text())
    md = (tmp_path / "capacity.md").read_text()
    assert data["meta"]["ideal_s"] == 4 * 0.2 and data["meta"]["date"] in md
    rows = {r["impl"]: r for r in data["rows"]}
    assert set(rows) == {"orsgen adapter", "TRL bridge"}
    ors = rows["orsgen adapter"]
    assert (ors["scored"], ors["exceptions"]) == (8, 0), ors
    assert ors["max_open"] <= 2 and ors["left_after_exit"] == 0
    assert "| rollouts scored | 8/8 |" in md


@pytest.mark.slow
def test_curriculum_bench_writes_the_same_files_on_a_rerun(tmp_path: Path) -> None:
    """bench/curriculum.py (issue 28): its tracked files hold no timing, so a second run
    with the same settings leaves them byte-identical; the first-40-group zero-variance
    share is reported for every arm, the prior's arm included (issue 26)."""
    args = ["--groups", "40", "--prior-samples", "2", "--out", str(tmp_path)]
    run_bench("curriculum.py", args, timeout=600)
    first = {name: (tmp_path / name).read_bytes() for name in ("curriculum.json", "curriculum.md")}
    run_bench("curriculum.py", args, timeout=600)
    assert {name: (tmp_path / name).read_bytes() for name in first} == first
    arms = json.loads(first["curriculum.json"])["arms"]
    assert [a["arm"] for a in arms] == ["uniform", "pass_rate", "pass_rate+prior"]
    assert all("seconds" not in a and 0 <= a["zero_var_frac_first_40"] <= 1 for a in arms)


def test_curriculum_scale_bench_reports_every_size(tmp_path: Path) -> None:
    """bench/curriculum.py --scale (issue 29): the cost per group at 100, 10,000 and
    100,000 tasks, drawing, in the first pass and uniform (no timing asserted)."""
    run_bench("curriculum.py", ["--scale", "--scale-groups", "20", "--out", str(tmp_path)], 300)
    rows = json.loads((tmp_path / "curriculum_scale.json").read_text())["rows"]
    assert [r["tasks"] for r in rows] == [100, 10_000, 100_000]
    assert all(r[m] > 0 for r in rows for m in ("drawing", "first pass", "uniform"))
    assert all(r["calls per group, drawing"] > 0 for r in rows)


@pytest.mark.slow
def test_eval_scale_bench_runs_with_tiny_parameters(tmp_path: Path) -> None:
    """bench/eval_scale.py: each size writing and writing nothing, every rollout scored,
    16 messages of 2 KB each on disk."""
    run_bench("eval_scale.py", ["--rollouts", "20,40", "--out", str(tmp_path)], timeout=600)
    data = json.loads((tmp_path / "eval_scale.json").read_text())
    assert data["setup"]["messages_per_rollout"] == 16
    runs = {(r["rollouts"], r["writes"]): r for r in data["runs"]}
    assert set(runs) == {(20, False), (20, True), (40, False), (40, True)}
    assert all(r["coverage"] == 1.0 and r["peak_rss_mb"] > 0 for r in runs.values())
    assert runs[(40, True)]["results_mb"] > 40 * 15 * 2000 / 2**20  # the rows went to disk
    assert runs[(40, False)]["results_mb"] == 0
    md = (tmp_path / "eval_scale.md").read_text()
    assert "| 40 | yes |" in md and "of the speed of writing nothing" in md


@pytest.mark.slow
def test_throughput_bench_runs_with_tiny_parameters(tmp_path: Path) -> None:
    """bench/throughput.py (issue 36): orsgen with one endpoint and with two, at one
    concurrency level, against stand-in endpoints with a short latency. Every rollout
    is scored in 2 turns, the limit is concurrency / (2 x latency), the parts of a rollout's
    slot add up to it, no run beats the model's own latency, and two endpoints share the
    requests. The baseline contender (``--baseline``: here this checkout) runs alike, and
    the endpoint's own window holds the rollouts' requests: its rate is at least the
    rollouts' own and at most the limit."""
    args = ["--concurrency", "4", "--rollouts-per-worker", "2", "--latency", "0.05"]
    args += ["--contenders", "orsgen,orsgen-2,baseline", "--baseline", str(ROOT)]
    run_bench("throughput.py", [*args, "--out", str(tmp_path)], 600)
    data = json.loads((tmp_path / "throughput.json").read_text())
    runs = {(r["contender"], r["concurrency"]): r for r in data["runs"]}
    assert set(runs) == {(c, 4) for c in ("orsgen", "orsgen-2", "baseline")}
    for r in runs.values():
        window = r["endpoint_window_fraction_of_limit"]
        assert r["fraction_of_limit"] <= window <= 1, r
        assert r["rollouts"] == r["scored"] == 2 * r["concurrency"], r
        assert r["turns_per_rollout"] == 2
        assert r["limit_rollouts_per_second"] == pytest.approx(r["concurrency"] / 0.1)
        assert sum(r["split_ms"].values()) == pytest.approx(r["slot_ms"], abs=1)
        assert r["split_ms"]["model latency"] == pytest.approx(100)
        assert 0 < r["fraction_of_limit"] <= 1 and r["eval_cpu_ms_per_rollout"] > 0
        # 2 requests a rollout, the warm-up rollout's included
        assert sum(r["endpoint_requests"]) == 2 * (r["rollouts"] + 1)
    assert runs[("orsgen", 4)]["endpoint_requests"][1] == 0
    assert min(runs[("orsgen-2", 4)]["endpoint_requests"]) > 0
    md = (tmp_path / "throughput.md").read_text()
    assert "| orsgen-2 | 2 | 4 | 8 | 8 |" in md and data["machine"]["uptime_before"] in md


@pytest.mark.slow
def test_upload_bench_runs_with_tiny_parameters(tmp_path: Path) -> None:
    """bench/upload.py (issues 27, 34): one run without upload and one uploading to the
    platform stand-in; every rollout of the uploading run arrives, none is dropped."""
    args = ["--rounds", "1", "--tasks", "2", "--samples", "2", "--modes", "none,healthy"]
    run_bench("upload.py", [*args, "--out", str(tmp_path)], 600)
    data = json.loads((tmp_path / "upload.json").read_text())
    runs = {r["mode"]: r for r in data["runs"]}
    assert set(runs) == {"none", "healthy"}
    assert all(r["rollouts"] == 4 for r in runs.values()), runs
    assert (runs["healthy"]["uploaded"], runs["healthy"]["dropped"]) == (4, 0), runs


@pytest.mark.slow
def test_replay_bench_runs_with_tiny_parameters(tmp_path: Path) -> None:
    """bench/replay.py (issue 41): a recorded evaluation and its replay, which changes nothing
    (the script asserts it), one figure of each at the concurrency level asked for."""
    args = ["--samples", "2", "--rounds", "1", "--concurrency", "2"]
    run_bench("replay.py", [*args, "--out", str(tmp_path)], 600)
    data = json.loads((tmp_path / "replay.json").read_text())
    assert [f["concurrency"] for f in data["levels"]] == [2]
    assert all(f["rollouts"] == 8 and f["replay_wall_seconds"] > 0 for f in data["levels"])

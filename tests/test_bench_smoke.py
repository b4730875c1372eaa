"""The benchmark runs end to end with tiny parameters (no timing asserts: benchmarks
are not tests). Checks the outputs exist and the structural figures hold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_runs_with_tiny_parameters(tmp_path: Path) -> None:
    child = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--tasks", "20", "--calls", "10",
         "--setup-delay", "0.2", "--group", "3", "--k", "3", "--rollout-calls", "1", "--out", str(tmp_path)],
        cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=300,
    )
    assert child.returncode == 0, child.stdout[-2000:] + child.stderr[-4000:]
    data = json.loads((tmp_path / "latest.json").read_text())
    md = (tmp_path / "latest.md").read_text()
    assert data["meta"]["machine"] and data["meta"]["date"] in md
    gen = lambda section: next(r for r in data[section] if r["impl"].startswith("orsgen"))  # noqa: E731
    assert gen("dataset")["requests"] <= 2
    assert gen("tool_call")["requests_per_call"] == 1.0
    assert gen("leaks") == {"impl": "orsgen adapter", "after_close": 0, "after_gc": 0, "after_exit": 0}
    assert "| target | goal | measured | met |" in md

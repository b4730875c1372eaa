"""bench/validate.py (issue 46's speed figure) runs end to end with tiny parameters; the figure
itself is in bench/results/validate.md, not asserted here (no timing asserts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT


@pytest.mark.slow  # serves an environment and a proxy, then a validate process: about 15 s
@pytest.mark.timeout(300)
def test_validate_bench_runs_with_tiny_parameters(tmp_path: Path) -> None:
    args = ["--tasks", "2", "--latency", "0.01", "--rounds", "1", "--out", str(tmp_path)]
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "validate.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert run.returncode == 0, run.stderr
    result = json.loads((tmp_path / "validate.json").read_text())
    (only,) = result["rounds"]
    assert only["tasks"] == 2 and only["exit_code"] == 0 and only["sessions"] > 2
    assert (tmp_path / "validate.md").is_file()

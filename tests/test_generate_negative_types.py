"""Negative type test: misusing a generated adapter must fail mypy, line by line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MISUSE = ROOT / "tests" / "typecheck" / "misuse.py"


@pytest.mark.slow
def test_misuse_fails_mypy_on_every_marked_line() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--show-error-codes",
            str(MISUSE.relative_to(ROOT)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    found = {
        (int(m.group(1)), m.group(2))
        for m in re.finditer(r"misuse\.py:(\d+): error: .*\[([a-z-]+)\]$", proc.stdout, re.M)
    }
    expected = {
        (i, m.group(1))
        for i, line in enumerate(MISUSE.read_text().splitlines(), start=1)
        if (m := re.search(r"# E: ([a-z-]+)$", line))
    }
    assert len(expected) >= 5
    assert found == expected, proc.stdout

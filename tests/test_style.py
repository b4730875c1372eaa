"""Style that CI enforces: the pinned black (constraints.txt) leaves orsgen/, tests/, bench/
and examples/ exactly as they are."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import ROOT

FORMATTED = ["orsgen", "tests", "bench", "examples"]


def test_black_is_the_pinned_version() -> None:
    import black

    (pinned,) = re.findall(r"^black==(\S+)$", (ROOT / "constraints.txt").read_text(), re.M)
    assert black.__version__ == pinned  # another black formats differently


@pytest.mark.slow  # black over every file of a fresh checkout: about 15 s of CPU
def test_black_would_change_nothing() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "black", "--check", *FORMATTED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr  # names each file black would reformat

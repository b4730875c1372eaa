"""The demo figures of docs/getting-started.md are what the demo's training gives: the
training command of scripts/demo.sh, run as written against a real echo server, must print
the page's per-step table, its first / last means and grad-norm count, and draw
docs/demo_reward.png byte for byte (the page says how far this holds; a failure here on
another install is the variation it describes)."""

from __future__ import annotations

import csv
import re
import shlex
from pathlib import Path

import pytest

import ors_server
from conftest import ECHO_ENV, ROOT

pytestmark = pytest.mark.timeout(600)

PAGE = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
SECTION = PAGE.split("**What the demo's training shows.**", 1)[1].split("\n**Where", 1)[0]


def _demo_arguments() -> list[str]:
    """The options demo.sh passes to examples/train_echo.py (its lines joined)."""
    script = (ROOT / "scripts" / "demo.sh").read_text().replace("\\\n", " ")
    line = next(row for row in script.splitlines() if "examples/train_echo.py" in row)
    words = shlex.split(line.split("examples/train_echo.py", 1)[1])
    return [w for w in words if not w.startswith("runs/")]


def _readme_table() -> dict[str, dict[int, str]]:
    rows = [r.strip("|").split("|") for r in SECTION.splitlines() if r.startswith("| ")]
    steps = [int(cell) for cell in rows[0][1:]]
    return {row[0].strip(): dict(zip(steps, (c.strip() for c in row[1:]))) for row in rows[1:]}


def test_the_readme_demo_figures_are_what_the_demo_gives(
    ors_servers: ors_server.Servers, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import train_echo  # examples/, as demo.sh runs it

    arguments = _demo_arguments()
    assert arguments[:2] == ["--steps", "30"] and arguments[-1] == "--output-dir", arguments
    server = ors_servers.own(ECHO_ENV)
    out = tmp_path / "demo"
    assert train_echo.main(["--base-url", server.url, *arguments, str(out)]) == 0
    printed = capsys.readouterr().out

    with (out / "steps.csv").open() as f:
        ran = {int(row["step"]): row for row in csv.DictReader(f)}
    table = _readme_table()
    for step, shown in table["reward mean"].items():
        assert f"{float(ran[step]['reward_mean']):.3f}" == shown, (step, ran[step])
        assert f"{float(ran[step]['coverage']):.2f}" == table["scored"][step], (step, ran[step])
        assert f"{float(ran[step]['grad_norm']):.3f}".rstrip("0").rstrip(".") == (
            table["grad norm"][step].rstrip("0").rstrip(".")
        ), (step, ran[step])

    said = re.search(
        r"Mean reward over the first 5 steps ([0-9.]+), over the last 5 steps ([0-9.]+); "
        r"grad norm > 0 on (\d+) of\s+the 30 steps",
        SECTION,
    )
    assert said is not None, SECTION
    printed_summary = (
        f"reward mean over the first 5 steps {said[1]}, over the last 5 {said[2]}; "
        f"grad norm > 0 on {said[3]} of 30 steps"
    )
    assert printed_summary in printed, printed[-2000:]
    assert (out / "reward.png").read_bytes() == (ROOT / "docs" / "demo_reward.png").read_bytes()
    assert server.wait_sessions(0, timeout=30) == 0

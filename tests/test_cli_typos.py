"""A mistyped option or configuration key names the closest valid one (one helper,
``orsgen.wording.did_you_mean``, for both)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT
from orsgen.generate.pipeline import config
from orsgen.wording import closest, did_you_mean

pytestmark = pytest.mark.timeout(180)

SNAPSHOT = ROOT / "generated" / "echo" / "snapshot.json"


def test_closest() -> None:
    options = ["--split", "--output", "--secret", "-o"]
    assert closest("--spilt", options) == "--split"
    assert closest("--ouput", options) == "--output"
    assert closest("--zzzzzz", options) is None
    assert did_you_mean("exclud", ["include", "exclude"]) == "; did you mean 'exclude'?"
    assert did_you_mean("zzzz", ["include", "exclude"]) == ""


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["--spilt", "train"], "--split"),
        (["--spilt=train"], "--split"),
        (["--fail-on-warnings"], "--fail-on-warning"),
        # Before the missing -o is reported: the typo is why -o is missing.
        (["--ouput", "generated/x"], "--output"),
    ],
)
def test_a_mistyped_option_names_the_closest(args, suggestion, orsgen_subprocess, tmp_path):
    out = ["-o", str(tmp_path / "pkg")] if "--ouput" not in args else []
    run = orsgen_subprocess([str(SNAPSHOT), *out, *args])
    assert run.code == 2, run.stderr
    last = run.stderr.splitlines()[-1]
    assert last.startswith("orsgen: error: unrecognized arguments: "), run.stderr
    assert last.endswith(f"; did you mean {suggestion!r}?"), run.stderr
    assert not (tmp_path / "pkg").exists()


def test_check_names_the_closest_option(orsgen_subprocess) -> None:
    run = orsgen_subprocess(["check", str(SNAPSHOT.parent), "--lvie"])
    assert run.code == 2 and run.stderr.rstrip().endswith("did you mean '--live'?"), run.stderr


def test_no_suggestion_for_what_is_not_close(orsgen_subprocess, tmp_path) -> None:
    run = orsgen_subprocess([str(SNAPSHOT), "-o", str(tmp_path / "pkg"), "--zzzzzz"])
    assert run.code == 2 and "unrecognized arguments: --zzzzzz" in run.stderr, run.stderr
    assert "did you mean" not in run.stderr


def test_valid_spellings_are_not_flagged(orsgen_subprocess, tmp_path) -> None:
    # A unique prefix (--no-task for --no-task-tools), -o with its value attached, NAME=VALUE.
    out = tmp_path / "echo"
    run = orsgen_subprocess(
        [str(SNAPSHOT), f"-o{out}", "--no-task", "--secret=token=zq-unused-91f", "-q"]
    )
    assert run.code == 0, run.stderr
    assert (out / "adapter.py").is_file()


@pytest.mark.parametrize(
    ("toml", "key", "suggestion"),
    [
        (
            '[tool.orsgen.packages."gen/echo"]\nexclud = ["hint"]\n',
            "packages.gen/echo.exclud",
            "exclude",
        ),
        (
            '[tool.orsgen.packages."gen/echo".rename]\ntool = {}\n',
            "packages.gen/echo.rename.tool",
            "tools",
        ),
        ("[tool.orsgen]\npakages = {}\n", "pakages", "packages"),
    ],
)
def test_a_mistyped_config_key_names_the_closest(toml, key, suggestion, tmp_path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(toml)
    with pytest.raises(config.ConfigError) as raised:
        config.load(path)
    assert f"{key}: unknown key; did you mean {suggestion!r}?" in str(raised.value)


def test_the_cli_shows_the_config_suggestion(orsgen_subprocess, tmp_path) -> None:
    (tmp_path / "gen").mkdir()  # -o into a missing directory is refused first
    (tmp_path / "pyproject.toml").write_text(
        '[tool.orsgen.packages."gen/echo"]\nexclud = ["hint"]\n'
    )
    run = orsgen_subprocess(
        [
            str(SNAPSHOT),
            "-o",
            str(tmp_path / "gen" / "echo"),
            "--config",
            str(tmp_path / "pyproject.toml"),
        ]
    )
    assert run.code == 2, run.stderr
    assert "exclud: unknown key; did you mean 'exclude'?" in run.stderr
    assert list((tmp_path / "gen").iterdir()) == []


def test_a_mistyped_command_names_check(orsgen_subprocess, tmp_path) -> None:
    run = orsgen_subprocess(["chek", str(SNAPSHOT.parent)])
    assert run.code == 2, run.stderr
    assert run.stderr == "orsgen: error: unknown command 'chek'; did you mean 'check'?\n"

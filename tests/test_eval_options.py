"""``orsgen eval``'s options as a user types them: a bad value or a misspelt flag is one
line naming the flag, before any network call (the endpoint and the ORS server given here
do not exist: a command that reached for them would fail otherwise, later and slower), and
``--help`` states every default."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT
from serve_model import free_port

pytestmark = pytest.mark.timeout(180)

PACKAGE = ROOT / "generated" / "echo"


def _nowhere() -> list[str]:
    port = free_port()  # nothing listens there
    return [
        str(PACKAGE),
        "--endpoint",
        f"http://127.0.0.1:{port}/v1",
        "--model",
        "m",
        "--base-url",
        f"http://127.0.0.1:{port}",
    ]


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["-n", "0"], "-n/--samples"),
        (["--samples", "abc"], "-n/--samples"),
        (["--concurrency", "-1"], "--concurrency"),
        (["--num-tasks", "0"], "--num-tasks"),
        (["--max-turns", "0"], "--max-turns"),
        (["--max-tokens", "0"], "--max-tokens"),
        (["--temperature", "-0.5"], "--temperature"),
        (["--min-coverage", "2"], "--min-coverage"),
        (["--indices", "1,x"], "--indices"),
        (["--rollout-timeout", "0"], "--rollout-timeout"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_flag(args, flag, orsgen_subprocess) -> None:
    run = orsgen_subprocess(["eval", *_nowhere(), *args])
    assert run.code == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("orsgen eval: error: ") and flag in lines[0], lines
    assert "does not answer" not in run.stderr and "usage:" not in run.stderr


@pytest.mark.parametrize(
    ("typo", "meant"),
    [("--spilt", "--split"), ("--sampels", "--samples"), ("--endpiont", "--endpoint")],
)
def test_a_misspelt_flag_says_did_you_mean(typo, meant, orsgen_subprocess) -> None:
    run = orsgen_subprocess(["eval", *_nowhere(), typo, "test"])
    assert run.code == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert f"did you mean {meant!r}?" in lines[0], lines


def test_help_states_each_default_and_what_is_written(orsgen_subprocess) -> None:
    run = orsgen_subprocess(["eval", "--help"])
    assert run.code == 0, run.stderr
    text = " ".join(run.stdout.split())
    assert "Nothing is written without --out" in text
    for flag, default in [
        ("--max-turns MAX_TURNS", "(default 8)"),
        ("--temperature TEMPERATURE", "(default: the endpoint's own)"),
        ("--max-tokens MAX_TOKENS", "(default: the endpoint's own limit)"),
        ("--max-rollout-tokens N", "default: no limit)"),
        ("--price IN,OUT", "(default: none)"),
        ("--out OUT", "(default: none, nothing is written)"),
        ("--pass-threshold PASS_THRESHOLD", "(default: the package's pass threshold, else 1)"),
        ("-n SAMPLES, --samples SAMPLES", "(default 1)"),
    ]:
        found = re.search(re.escape(flag) + r" (.*?)(?= -{1,2}[a-z]|$)", text)
        assert found is not None and default in found.group(1), (flag, text)

"""``orsgen validate`` through the CLI, against tests/envs/validate_envs.py (served once per
test session on a free port): each check is found on the environment built with its one
defect, named with its task and tool; clean environments pass; the exit codes, Ctrl-C, an
unreachable target, secrets, a generated package and a file target (issue 46)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ors_server
from conftest import ENVS, ROOT

pytestmark = pytest.mark.timeout(180)

VALIDATE_ENVS = ENVS / "validate_envs.py"
FINDING_KEYS = {"check", "severity", "split", "task_index", "tool", "evidence"}
CHECKS = {
    "trivial_reward",
    "nondeterministic",
    "split_overlap",
    "duplicate_tasks",
    "task_index_ignored",
    "empty_prompt",
    "reward_out_of_range",
    "server_error",
    "session_state_leak",
    "undocumented",
    "finished_unscored",
}
SECRET = "orsgen-validate-fake-secret-7c1d"
API_KEY = "orsgen-validate-fake-key-2e9a"


@pytest.fixture(scope="session")
def validate_server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(VALIDATE_ENVS)


def _run(orsgen_cli: Any, args: list[str], out: Path) -> tuple[Any, dict[str, Any]]:
    run = orsgen_cli(["validate", *args, "--out", str(out)])
    report = json.loads((out / "validation.json").read_text())
    return run, report


def _where(report: dict[str, Any]) -> set[tuple[Any, ...]]:
    return {
        (f["check"], f["severity"], f["split"], f["task_index"], f["tool"])
        for f in report["findings"]
    }


def _each_task(check: str, severity: str, tool: str | None) -> set[tuple[Any, ...]]:
    return {(check, severity, s, i, tool) for s in ("train", "test") for i in (0, 1)}


# env, extra options, the findings (check, severity, split, task, tool), exit code.
DEFECTS = [
    ("trivialreward", [], _each_task("trivial_reward", "error", "give_up"), 1),
    ("nondetreward", [], _each_task("nondeterministic", "error", "answer"), 1),
    ("nondetoutput", [], _each_task("nondeterministic", "warning", "answer"), 0),
    (
        "splitoverlap",
        ["--num-tasks", "4"],
        {("split_overlap", "error", "test", 1, None)},
        1,
    ),
    (
        "duplicatetasks",
        ["--num-tasks", "all"],
        {("duplicate_tasks", "warning", "train", 3, None)},
        0,
    ),
    (
        "taskindexignored",
        [],
        {("task_index_ignored", "error", s, 0, None) for s in ("train", "test")},
        1,
    ),
    ("emptyprompt", ["--num-tasks", "4"], {("empty_prompt", "error", "train", 2, None)}, 1),
    ("nanreward", [], _each_task("reward_out_of_range", "error", "score"), 1),
    ("neginfreward", [], _each_task("reward_out_of_range", "error", "score"), 1),
    # 2.0 also passes the default threshold (trivial_reward): above it, only the range is off.
    (
        "widereward",
        ["--pass-threshold", "3"],
        _each_task("reward_out_of_range", "warning", "score"),
        0,
    ),
    ("servererror", [], _each_task("server_error", "error", "answer"), 1),
    # The leak is in tools after ``answer``, which ends the episode: the probe goes on past it.
    ("sessionstateleak", [], _each_task("session_state_leak", "error", "recall"), 1),
    ("undocumented", [], {("undocumented", "warning", None, None, "answer")}, 0),
    ("finishedunscored", [], _each_task("finished_unscored", "warning", "answer"), 0),
]


@pytest.mark.parametrize("env, options, expected, code", DEFECTS, ids=[d[0] for d in DEFECTS])
def test_each_defect_is_found_by_its_check_alone(
    env: str,
    options: list[str],
    expected: set[tuple[Any, ...]],
    code: int,
    validate_server: ors_server.RunningServer,
    orsgen_cli: Any,
    tmp_path: Path,
) -> None:
    args = [validate_server.url, "--env-name", env, "--num-tasks", "2", *options]
    run, report = _run(orsgen_cli, args, tmp_path / "out")
    assert run.code == code, (run.stdout, run.stderr)
    assert _where(report) == expected, report["findings"]
    (check,) = {f[0] for f in expected}
    assert set(report["checks"]) == CHECKS
    failed = {name for name, c in report["checks"].items() if c["status"] == "failed"}
    assert failed == {check}
    for finding in report["findings"]:
        assert set(finding) == FINDING_KEYS
        assert finding["evidence"]
    lines = run.stdout.splitlines()
    assert any(line.split()[:2] == [check, "failed"] for line in lines), run.stdout
    if check == "split_overlap":  # the other task of the pair is in the evidence
        (finding,) = report["findings"]
        assert finding["evidence"]["same_as"] == {"split": "train", "task_index": 2}
    if check == "reward_out_of_range" and report["findings"][0]["severity"] == "error":
        rewards = {c["reward"] for f in report["findings"] for c in f["evidence"]["calls"]}
        assert rewards <= {"NaN", "-Infinity"} and rewards


@pytest.mark.parametrize("env", ["clean", "echo"])
def test_clean_environments_have_no_error(
    env: str,
    validate_server: ors_server.RunningServer,
    echo_server: ors_server.RunningServer,
    orsgen_cli: Any,
    tmp_path: Path,
) -> None:
    args = [validate_server.url, "--env-name", "clean"] if env == "clean" else [echo_server.url]
    run, report = _run(orsgen_cli, [*args, "--num-tasks", "2"], tmp_path / "out")
    assert run.code == 0, (run.stdout, run.stderr)
    assert [f for f in report["findings"] if f["severity"] == "error"] == []
    assert report["checks"]["split_overlap"]["status"] == "passed"  # two splits compared
    if env == "clean":  # every tool probed, the task tool too
        assert {"answer", "lookup", "status", "hint"} <= set(report["latency"]["tools"])
        assert report["findings"] == []


def test_fail_on_warning_exits_1_on_a_warning(
    validate_server: ors_server.RunningServer, orsgen_cli: Any, tmp_path: Path
) -> None:
    args = [validate_server.url, "--env-name", "undocumented", "--num-tasks", "1"]
    run, report = _run(orsgen_cli, [*args, "--fail-on", "warning"], tmp_path / "out")
    assert run.code == 1, (run.stdout, run.stderr)
    assert {f["severity"] for f in report["findings"]} == {"warning"}


@pytest.mark.slow  # a process of its own (what it prints at exit counts), about 10 s
def test_unreachable_target_exits_2_in_one_line(orsgen_subprocess: Any, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{ors_server.free_port()}"
    out = tmp_path / "out"
    run = orsgen_subprocess(["validate", url, "--timeout", "2", "--out", str(out)])
    assert run.code == 2
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    # Progress lines, then the error in one line, last: nothing else (no warning at exit).
    assert all(line.startswith("orsgen validate: ") for line in lines), run.stderr
    assert [line for line in lines if "error" in line] == lines[-1:], run.stderr
    assert url in lines[-1]


def test_no_key_or_secret_is_written_or_printed(
    validate_server: ors_server.RunningServer, orsgen_cli: Any, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    args = [validate_server.url, "--env-name", "clean", "--num-tasks", "1", "--out", str(out)]
    run = orsgen_cli(["validate", *args, "--api-key", API_KEY, "--secret", f"TOKEN={SECRET}"])
    assert run.code == 0, run.stderr
    assert {"report.md", "validation.json"} <= {p.name for p in out.iterdir()}
    for text in [run.stdout, run.stderr, *(p.read_text() for p in out.rglob("*") if p.is_file())]:
        assert SECRET not in text and API_KEY not in text


def test_generated_package_with_base_url(
    validate_server: ors_server.RunningServer, orsgen_cli: Any, tmp_path: Path
) -> None:
    package = tmp_path / "servererror_pkg"
    made = orsgen_cli([validate_server.url, "--env-name", "servererror", "-o", str(package)])
    assert made.code == 0, made.stderr
    args = [str(package), "--base-url", validate_server.url, "--num-tasks", "1"]
    run, report = _run(orsgen_cli, args, tmp_path / "out")
    assert run.code == 1, (run.stdout, run.stderr)
    assert _where(report) == {("server_error", "error", s, 0, "answer") for s in ("train", "test")}


def test_file_target(orsgen_cli: Any, tmp_path: Path) -> None:
    args = [str(VALIDATE_ENVS), "--env-name", "trivialreward", "--num-tasks", "1"]
    run, report = _run(orsgen_cli, [*args, "--split", "test"], tmp_path / "out")
    assert run.code == 1, (run.stdout, run.stderr)
    assert _where(report) == {("trivial_reward", "error", "test", 0, "give_up")}


def _default_sigint() -> None:
    # A shell's background jobs ignore SIGINT; a terminal's foreground orsgen has the default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow  # a process of its own, about 10 s
def test_ctrl_c_mid_run_writes_what_was_found_and_exits_130(
    validate_server: ors_server.RunningServer, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
    env.update({"OPENREWARD_DISABLE_UPDATE_CHECK": "1", "OPENREWARD_LOG_LEVEL": "WARNING"})
    args = [validate_server.url, "--env-name", "clean", "--num-tasks", "all"]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "orsgen",
            "validate",
            *args,
            "--concurrency",
            "1",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("orsgen validate: probing "):
                break
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 130
    report = json.loads((out / "validation.json").read_text())
    assert report["interrupted"] is True
    assert set(report["checks"]) == CHECKS
    assert (out / "report.md").is_file()

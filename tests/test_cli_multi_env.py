"""A server hosting two environments (tests/envs/two_envs.py: ``first`` and ``second``).

TRL's bridge silently talks to the first one; orsgen must refuse to guess, and with
``--env-name second`` everything (tools, tasks, prompt, calls) must hit ``second``.
The server counts requests by method and path, so the test sees where they went.
"""

from __future__ import annotations

import json

import pytest

import ors_server
from conftest import TWO_ENVS, import_generated

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def two_server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(TWO_ENVS, envs=["First", "Second"])


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    # "connecting to" comes first; the error is the one line after it.
    assert lines[0].startswith("orsgen: connecting to "), stderr
    lines = lines[1:]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_without_env_name_the_error_lists_both(two_server, orsgen_subprocess, tmp_path) -> None:
    run = orsgen_subprocess([two_server.url, "-o", str(tmp_path / "pkg")])  # not quiet
    assert run.code == 2
    line = one_error_line(run.stderr)
    assert "first" in line and "second" in line and "--env-name" in line
    assert not (tmp_path / "pkg").exists()


@pytest.mark.slow
def test_an_unknown_env_name_is_a_usage_error(two_server, orsgen_subprocess, tmp_path) -> None:
    run = orsgen_subprocess([two_server.url, "-o", str(tmp_path / "pkg"), "--env-name", "third"])
    assert run.code == 2
    line = one_error_line(run.stderr)
    assert "third" in line and "first" in line and "second" in line
    assert not (tmp_path / "pkg").exists()


def test_env_name_selects_the_second_environment(two_server, orsgen_cli, tmp_path) -> None:
    two_server.reset_counts()
    out = tmp_path / "second_pkg"
    run = orsgen_cli(
        [two_server.url, "-o", str(out), "--env-name", "second", "--class-name", "SecondEnv", "-q"]
    )
    assert run.code == 0, run.stderr
    snapshot_requests = two_server.requests()
    pkg = import_generated(out)
    env_cls = pkg.SecondEnv

    # Tools: the second environment's, never the first's.
    assert set(env_cls.WIRE_NAMES) == {"second_tool"}
    snapshot = json.loads((out / "snapshot.json").read_text())
    assert snapshot["environment"]["identity"]["env_name"] == "second"
    assert [s["num_tasks"] for s in snapshot["environment"]["splits"]] == [3]
    assert any(k.startswith("GET /second/") for k in snapshot_requests)
    assert not any("/first/" in k for k in snapshot_requests), snapshot_requests

    two_server.reset_counts()
    # Tasks.
    ds = pkg.load_tasks(base_url=two_server.url)
    assert ds["task_index"] == [0, 1, 2]
    assert ds["word"] == ["second-0", "second-1", "second-2"]
    assert ds["color"] == ["red", "green", "blue"]
    # Prompt and calls.
    env = env_cls(base_url=two_server.url)
    try:
        assert env.reset(task_index=1) == "SECOND prompt for second-1"
        assert env.second_tool(word="second-0") == "second got second-0"
        assert env.rewards == [-1.0]
        assert env.second_tool(word="second-1") == "second got second-1"
        assert env.reward == 1.0 and env.finished
    finally:
        env.close()
    calls = two_server.requests()
    assert calls.get("POST /second/call") == 2
    assert calls.get("GET /second/prompt") == 1
    assert calls.get("POST /second/task_range", 0) + calls.get("POST /second/tasks", 0) >= 1
    # Nothing went to the first environment, by name or through the default redirect.
    assert not any("/first/" in k for k in calls), calls
    for bare in ("POST /call", "GET /prompt", "POST /task_range", "POST /tasks", "GET /tools"):
        assert bare not in calls, calls
    assert two_server.wait_sessions(0) == 0

"""Task-tool probes while snapshotting: which task tools a probe session finds
(``--no-task-tools``, ``--probe-index``), what differs between probes, which split they
run on (``--split``), and that every probe session is closed.

The rules environment (tests/envs/rules_env.py) has shared tools answer/score/explode,
a task tool ``shifty`` on tasks 0 and 1 (with a different schema on each) and a task tool
``only_two`` on task 2 alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import RULES_SHARED_TOOLS as SHARED
from conftest import import_generated, trl_tools

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings("ignore:task metadata 'answer':UserWarning"),  # see rules_env
]


def snapshot_of(module: Any) -> dict[str, Any]:
    return dict(json.loads((Path(module.__file__).parent / "snapshot.json").read_text()))


def test_no_task_tools_binds_shared_tools_only(rules_server, orsgen_cli, tmp_path) -> None:
    rules_server.reset_counts()
    out = tmp_path / "rules_shared_only"
    # Through the CLI: the one test of --no-task-tools that generates a package.
    args = [rules_server.url, "-o", str(out), "--class-name", "RulesEnv", "--no-task-tools", "-q"]
    run = orsgen_cli(args)
    assert run.code == 0, run.stderr
    pkg = import_generated(out)
    assert trl_tools(pkg.RulesEnv) == SHARED
    assert set(pkg.RulesEnv.WIRE_NAMES) == SHARED
    # Without probes no session is ever opened.
    calls = rules_server.requests()
    assert calls.get("POST /create", 0) == 0 and calls.get("POST /create_session", 0) == 0
    assert snapshot_of(pkg)["environment"]["task_tools"] == []


def test_a_task_tool_of_task_2_appears_only_when_2_is_probed(
    rules_server, rules_pkg, generate_package
) -> None:
    assert "only_two" not in trl_tools(rules_pkg.RulesEnv)  # default probe: task 0
    only2 = generate_package(
        "rules_probe_2", rules_server.url, class_name="RulesEnv", probe_indices=(2,)
    )
    assert trl_tools(only2.RulesEnv) == SHARED | {"only_two"}  # task 2 has no shifty
    both = generate_package(
        "rules_probe_0_2", rules_server.url, class_name="RulesEnv", probe_indices=(2, 0)
    )
    assert trl_tools(both.RulesEnv) == SHARED | {"only_two", "shifty"}
    assert snapshot_of(both)["environment"]["task_tools_probe"]["indices"] == [0, 2]
    # And the probed tool really runs on task 2.
    env = only2.RulesEnv(base_url=rules_server.url)
    try:
        env.reset(task_index=2)
        assert env.only_two() == "two only"
    finally:
        env.close()
    assert rules_server.wait_sessions(0) == 0  # probe sessions were closed too


def test_a_schema_that_differs_between_probes_is_a_warning(
    rules_server, orsgen_cli, tmp_path
) -> None:
    out = tmp_path / "rules_probe_0_1"
    run = orsgen_cli(
        [
            rules_server.url,
            "-o",
            str(out),
            "--class-name",
            "RulesEnv",
            "--probe-index",
            "0",
            "--probe-index",
            "1",
        ]
    )
    assert run.code == 0, run.stderr
    # Diagnostics only: the loopback default's "orsgen: warning:" line is not one.
    warnings = [line for line in run.stderr.splitlines() if line.strip().startswith("warning:")]
    assert len(warnings) == 1, run.stderr
    assert "shifty" in warnings[0]
    assert "task 0" in warnings[0] and "task 1" in warnings[0]
    # The first probe's schema is kept.
    tools = json.loads((out / "snapshot.json").read_text())["environment"]["task_tools"]
    (shifty,) = [t for t in tools if t["name"] == "shifty"]
    assert shifty["input_schema"]["properties"]["n"]["type"] == "integer"
    # With --fail-on-warning the same run writes nothing and exits 1.
    strict = orsgen_cli(
        [
            rules_server.url,
            "-o",
            str(tmp_path / "strict"),
            "--probe-index",
            "0",
            "--probe-index",
            "1",
            "--fail-on-warning",
        ]
    )
    assert strict.code == 1
    assert not (tmp_path / "strict").exists()


def test_an_out_of_range_probe_index_is_a_usage_error(rules_server, orsgen_cli, tmp_path) -> None:
    run = orsgen_cli([rules_server.url, "-o", str(tmp_path / "x"), "--probe-index", "99"])
    assert run.code == 2
    assert "99" in run.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("probe", [[], ["--no-task-tools"]], ids=["probing", "no probes"])
def test_an_unknown_split_is_a_usage_error(rules_server, orsgen_cli, tmp_path, probe) -> None:
    run = orsgen_cli([rules_server.url, "-o", str(tmp_path / "x"), "--split", "nope", *probe])
    assert run.code == 2
    assert "'nope'" in run.stderr and "test, train" in run.stderr and "--split" in run.stderr
    assert not (tmp_path / "x").exists()
    assert rules_server.wait_sessions(0) == 0


def test_split_option_becomes_the_package_default(rules_server, generate_package) -> None:
    pkg = generate_package(
        "rules_test_split", rules_server.url, class_name="RulesEnv", split="test"
    )
    assert pkg.RulesEnv.DEFAULT_SPLIT == "test"
    assert pkg.load_tasks(base_url=rules_server.url)["task_index"] == [0, 1]


def test_snapshot_probes_leave_no_session(rules_server, orsgen_cli, tmp_path) -> None:
    rules_server.reset_counts()
    run = orsgen_cli(
        [
            rules_server.url,
            "-o",
            str(tmp_path / "probe_leak"),
            "--probe-index",
            "0",
            "--probe-index",
            "1",
            "--probe-index",
            "2",
            "-q",
        ]
    )
    assert run.code == 0, run.stderr
    assert rules_server.requests().get("POST /create", 0) == 3
    assert rules_server.wait_sessions(0) == 0

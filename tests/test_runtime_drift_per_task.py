"""The drift guard judges each task by the tools the snapshot saw on *that* task (issue 23).

A package generated with ``--probe-index 0 --probe-index 1`` from examples/echo_env.py,
whose task tool ``hint`` only some tasks offer: the snapshot records which probed task
offered which task tool, ``reset()`` compares per task, a verdict belongs to the task and
server it was measured on, and the runtime's warning agrees with ``orsgen check --live``.
Real servers, the CLI, the generated package.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import ors_server
from conftest import import_generated
from orsgen.runtime.records import metrics
from orsgen.runtime.sessions.drift import ToolDriftError, ToolDriftWarning

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("fresh_runtime")]

MOVED_ENV = Path(__file__).resolve().parent / "envs" / "hint_moved_env.py"


@pytest.fixture(scope="module")
def probed(
    echo_server: ors_server.RunningServer,
    orsgen_cli: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[ModuleType, Path]:
    """`orsgen URL -o x --probe-index 0 --probe-index 1`, imported."""
    out = tmp_path_factory.mktemp("probed") / "echo_probed"
    run = orsgen_cli(
        [echo_server.url, "-o", str(out), "--probe-index", "0", "--probe-index", "1"]
        + ["--class-name", "EchoEnv"]
    )
    assert run.code == 0, run.stderr
    return import_generated(out), out


@pytest.fixture(scope="module")
def moved(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(MOVED_ENV)


def test_the_snapshot_records_which_probed_task_offered_which_task_tool(probed) -> None:  # type: ignore[no-untyped-def]
    _pkg, out = probed
    probe = json.loads((out / "snapshot.json").read_text())["environment"]["task_tools_probe"]
    assert probe["indices"] == [0, 1]
    assert probe["tools_by_task"] == {"0": ["hint"], "1": []}


def test_a_task_without_a_task_tool_it_was_probed_without_is_not_drift(  # type: ignore[no-untyped-def]
    probed, echo_server, orsgen_cli
) -> None:
    pkg, out = probed
    step: dict[str, float] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ToolDriftWarning)
        env = pkg.EchoEnv(base_url=echo_server.url, prefetch=False)
        strict = pkg.EchoEnv(base_url=echo_server.url, prefetch=False, strict=True)
        try:
            env.reset(task_index=1)  # banana: probed, and it offered no hint then either
            env.echo(text="banana")
            strict.reset(task_index=1)
            strict.reset(task_index=0)
            pkg.rewards.outcome_reward([env], [[]], log_metric=step.__setitem__)
        finally:
            env.close()
            strict.close()
    assert step["ors/drift"] == 0.0
    check = orsgen_cli(["check", str(out), "--live"])
    assert check.code == 0 and "no drift" in check.stderr + check.stdout, (
        check.stderr + check.stdout
    )


def test_a_verdict_belongs_to_the_task_it_was_measured_on(  # type: ignore[no-untyped-def]
    probed, moved, orsgen_cli
) -> None:
    """On a server where task 0 stopped offering ``hint``: task 0 drifted, the other tasks
    did not, whichever adapter asks, and ``orsgen check --live`` names the same tool."""
    pkg, out = probed
    first = pkg.EchoEnv(base_url=moved.url, prefetch=False, strict=True)
    with pytest.raises(ToolDriftError, match="task tool 'hint' removed") as caught:
        first.reset(task_index=0)
    first.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ToolDriftWarning)
        for task in (1, 2, 3):  # a new adapter on other tasks of the same server
            other = pkg.EchoEnv(base_url=moved.url, prefetch=False, strict=True)
            try:
                other.reset(task_index=task)
            finally:
                other.close()
    again = pkg.EchoEnv(base_url=moved.url, prefetch=False, strict=True)
    with pytest.raises(ToolDriftError, match="task tool 'hint' removed"):
        again.reset(task_index=0)  # still task 0's verdict
    again.close()
    assert "orsgen check DIR --live" in str(caught.value)
    check = orsgen_cli(["check", str(out), "--live", "--target", moved.url])
    assert check.code == 1, check.stdout + check.stderr
    assert "tool 'hint' removed" in check.stdout


def test_drift_is_logged_for_the_drifted_tasks_rollouts_only(probed, moved) -> None:  # type: ignore[no-untyped-def]
    pkg, _out = probed
    metrics.counts().drain()
    envs = [pkg.EchoEnv(base_url=moved.url, prefetch=False) for _ in range(4)]
    steps: list[dict[str, float]] = [{}, {}]
    try:
        with pytest.warns(ToolDriftWarning, match="task tool 'hint' removed"):
            envs[0].reset(task_index=0)
        for task, env in enumerate(envs[1:], start=1):
            env.reset(task_index=task)
        pkg.rewards.outcome_reward(envs, [[]] * 4, log_metric=steps[0].__setitem__)
        envs[0].reset(task_index=1)  # the same adapter, now on a task that did not drift
        pkg.rewards.outcome_reward(envs, [[]] * 4, log_metric=steps[1].__setitem__)
    finally:
        for env in envs:
            env.close()
    assert steps[0]["ors/drift"] == 0.25
    assert steps[1]["ors/drift"] == 0.0


def test_check_live_sees_a_task_tool_move_between_probed_tasks(  # type: ignore[no-untyped-def]
    echo_server, moved, orsgen_cli, tmp_path
) -> None:
    """Probed on tasks 0 and 2 (both offered ``hint``): on the moved server the union of
    task tools is unchanged, yet task 0 lost ``hint``; both the runtime and ``orsgen check
    --live`` say so, and neither blames task 2."""
    out = tmp_path / "echo_probed_two"
    run = orsgen_cli(
        [echo_server.url, "-o", str(out), "--probe-index", "0", "--probe-index", "2"]
        + ["--class-name", "EchoEnv"]
    )
    assert run.code == 0, run.stderr
    pkg = import_generated(out)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ToolDriftWarning)
        env = pkg.EchoEnv(base_url=moved.url, prefetch=False, strict=True)
        try:
            env.reset(task_index=2)
            with pytest.raises(ToolDriftError, match="task tool 'hint' removed"):
                env.reset(task_index=0)
        finally:
            env.close()
    check = orsgen_cli(["check", str(out), "--live", "--target", moved.url])
    assert check.code == 1, check.stdout + check.stderr
    assert "task tool 'hint' no longer offered on task 0" in check.stdout
    assert "task 2" not in check.stdout

"""The runtime drift guard (orsgen/runtime/sessions/drift.py). On the first session an adapter class
opens in a process, its live tools are compared with the snapshot by hash, at the cost
of one request (GET /{env}/task_tools) per process; a difference warns once and names
what changed; ``strict=True`` raises instead."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import ors_server
import pytest
from envs.runtime_support import DRIFT_ENV

from generated.echo import EchoEnv
from orsgen.runtime.sessions import drift
from orsgen.runtime.sessions.drift import ToolDriftError, ToolDriftWarning, findings, tools_sha256

ROOT = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.usefixtures("fresh_runtime")


@pytest.fixture(scope="module")
def drifted(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(DRIFT_ENV)


def test_hash_is_shared_with_the_snapshotter() -> None:
    from orsgen.snapshot import model

    env = json.loads((ROOT / "generated/echo/snapshot.json").read_text())["environment"]
    assert model.tools_sha256 is tools_sha256
    assert tools_sha256(env) == EchoEnv.TOOLS_SHA256


def test_unchanged_environment_is_silent_and_costs_one_request(echo_server) -> None:
    echo_server.reset_counts()
    envs = [EchoEnv(base_url=echo_server.url, prefetch=False) for _ in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ToolDriftWarning)
        for task, env in enumerate(envs):  # task 0 was the snapshot's probe; 1 has no hint
            env.reset(task_index=task)
    assert echo_server.requests().get("GET /echoenv/task_tools") == 1
    for env in envs:
        env.close()


def test_unprobed_task_without_its_task_tool_is_not_drift(echo_server) -> None:
    echo_server.reset_counts()
    env = EchoEnv(base_url=echo_server.url, prefetch=False, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ToolDriftWarning)
        env.reset(task_index=1)  # banana has no hint tool; the snapshot probed task 0 only
    assert echo_server.requests().get("GET /echoenv/task_tools") == 1  # the tools were compared
    assert env.rollout.episode.drifted is False  # the verdict for this task: no drift
    assert env.echo(text="banana") == "echo: banana"  # strict=True let the episode run
    env.close()


def test_drift_warns_once_naming_what_changed(drifted) -> None:
    drifted.reset_counts()
    env = EchoEnv(base_url=drifted.url, group_size=2)
    with pytest.warns(ToolDriftWarning) as caught:
        env.reset(task_index=0)
    message = str(caught[0].message)
    assert (
        "tool 'echo' changed its schema (removed style; added lang; required list changed)"
        in message
    )
    assert "tool 'shout' added" in message
    assert "task tool 'hint' removed" in message
    assert drifted.url in message and "EchoEnv" in message
    other = EchoEnv(base_url=drifted.url, group_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ToolDriftWarning)  # once per class and process
        other.reset(task_index=0)
        env.reset(task_index=1)
    assert drifted.requests().get("GET /echoenv/task_tools") == 1
    for e in (env, other):
        e.close()
    assert drifted.wait_sessions(0) == 0


def test_strict_raises_and_leaves_no_session(drifted) -> None:
    env = EchoEnv(base_url=drifted.url, strict=True, prefetch=False)
    with pytest.raises(ToolDriftError, match="tool 'shout' added"):
        env.reset(task_index=0)
    with pytest.raises(ToolDriftError):  # every reset, not just the first
        env.reset(task_index=1)
    env.close()
    assert drifted.wait_sessions(0) == 0


def compare(env: Any, sha: str, live: Any, split: str, index: int | None) -> list[str]:
    return [f.text for f in findings(env, sha, live, split, index)]


def test_compare_rules() -> None:
    env = json.loads((ROOT / "generated/echo/snapshot.json").read_text())["environment"]
    live = env["tools"] + env["task_tools"]
    assert compare(env, EchoEnv.TOOLS_SHA256, live, "train", 0) == []
    assert compare(env, EchoEnv.TOOLS_SHA256, env["tools"], "train", 1) == []  # unprobed task
    assert compare(env, EchoEnv.TOOLS_SHA256, env["tools"], "train", 0) == [
        "task tool 'hint' removed"
    ]
    changed = [dict(env["tools"][0], description="Echo, differently.")] + env["task_tools"]
    assert compare(env, EchoEnv.TOOLS_SHA256, changed, "train", 0) == [
        "tool 'echo' changed its description"
    ]
    assert compare(env, EchoEnv.TOOLS_SHA256, env["task_tools"], "train", 0) == [
        "tool 'echo' removed"
    ]

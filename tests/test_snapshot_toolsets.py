"""Toolsets: ``orsgen TARGET --toolset NAME`` snapshots a session bound to an SDK
harness toolset, and every session the adapter opens binds it. A real openreward server
serves tests/envs/sandbox_env.py, whose stand-in sandbox runs commands in a temp dir."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ors_server
from conftest import ENVS, import_generated

SANDBOX_ENV = ENVS / "sandbox_env.py"
CLAUDE_CODE = {"bash", "edit", "glob", "grep", "read", "todo_write", "write"}


@pytest.fixture(scope="module")
def bound(
    ors_servers: ors_server.Servers, tmp_path_factory: pytest.TempPathFactory, orsgen_cli: Any
) -> Iterator[tuple[Any, Path, ors_server.RunningServer]]:
    out = tmp_path_factory.mktemp("toolset") / "sandbox_cc"
    run = orsgen_cli([str(SANDBOX_ENV), "--toolset", "claude-code", "-o", str(out), "-q"])
    assert run.code == 0, run.stderr
    module = import_generated(out)
    try:
        yield module, out, ors_servers(SANDBOX_ENV)
    finally:
        module.SandboxEnv.close_all()


def test_toolset_is_recorded_and_its_tools_are_typed_methods(bound) -> None:
    from transformers.utils import get_json_schema

    module, out, _ = bound
    env = json.loads((out / "snapshot.json").read_text())["environment"]
    assert env["identity"]["toolset"] == "claude-code"
    assert module.SandboxEnv.TOOLSET == "claude-code"
    assert "'claude-code' toolset" in (module.SandboxEnv.__doc__ or "")
    # The toolset's bash shadows the environment's own: only the session's spec is kept.
    assert [t["name"] for t in env["tools"]] == ["submit"]
    assert {t["name"] for t in env["task_tools"]} == CLAUDE_CODE
    assert set(module.SandboxEnv.WIRE_NAMES) == CLAUDE_CODE | {"submit"}
    bash = get_json_schema(module.SandboxEnv.bash)["function"]["parameters"]
    assert bash["required"] == ["command"]
    assert bash["properties"]["command"]["type"] == "string"


def test_bash_round_trips_through_the_adapter(bound) -> None:
    module, _, server = bound
    env = module.SandboxEnv(base_url=server.url)
    try:
        assert env.reset(task_index=0) == "Create hello.txt containing hello."
        out = env.bash(command="echo hello > hello.txt && cat hello.txt && pwd")
        assert "hello" in str(out) and "ors-sandbox-" in str(out), out
        assert "hello" in str(env.read(file_path=str(out).split("\n")[1].strip() + "/hello.txt"))
        assert env.submit(answer="done") == "ok" and env.reward == 1.0
    finally:
        env.close()


def test_live_check_binds_the_same_toolset_and_sees_no_drift(bound, orsgen_cli) -> None:
    _, out, _ = bound
    run = orsgen_cli(["check", str(out), "--live", "-q"])
    assert run.code == 0, run.stdout + run.stderr


def test_unknown_toolset_exits_2_listing_the_valid_ones(tmp_path: Path, orsgen_cli) -> None:
    run = orsgen_cli([str(SANDBOX_ENV), "--toolset", "vim", "-o", str(tmp_path / "x")])
    assert run.code == 2
    assert "unknown toolset 'vim'" in run.stderr
    for name in ("backsearch", "claude-code", "codex", "gemini-cli", "hermes", "openclaw"):
        assert name in run.stderr
    assert not (tmp_path / "x").exists()


def test_a_toolset_change_is_a_breaking_version_change() -> None:
    from orsgen.snapshot.stored import parse_environment
    from orsgen.generate.pipeline.versioning import classify

    base = {"tools": [], "task_tools": [], "identity": {"env_name": "e"}}
    bound = {**base, "identity": {"env_name": "e", "toolset": "claude-code"}}
    change = classify(parse_environment(base), parse_environment(bound))
    assert change.level == "major"
    assert any("toolset changed: None -> 'claude-code'" in c.message for c in change.changes)


def _config(tmp_path: Path, toolset: str) -> Path:
    path = tmp_path / "orsgen.toml"
    path.write_text(f'[packages."sandbox_cfg"]\ntoolset = "{toolset}"\n')
    return path


def test_toolset_from_the_config_file_binds_the_probe_sessions(tmp_path: Path, orsgen_cli) -> None:
    out = tmp_path / "sandbox_cfg"
    config = _config(tmp_path, "claude-code")
    run = orsgen_cli([str(SANDBOX_ENV), "--config", str(config), "-o", str(out), "-q"])
    assert run.code == 0, run.stderr
    env = json.loads((out / "snapshot.json").read_text())["environment"]
    assert env["identity"]["toolset"] == "claude-code"
    assert {t["name"] for t in env["task_tools"]} == CLAUDE_CODE
    assert 'TOOLSET: ClassVar[str | None] = "claude-code"' in (out / "adapter.py").read_text()


def test_the_toolset_flag_wins_over_the_config_file(tmp_path: Path, orsgen_cli) -> None:
    out = tmp_path / "sandbox_cfg"
    config = _config(tmp_path, "codex")
    run = orsgen_cli(
        [str(SANDBOX_ENV), "--config", str(config), "--toolset", "claude-code", "-o", str(out)]
    )
    assert run.code == 0, run.stderr
    env = json.loads((out / "snapshot.json").read_text())["environment"]
    assert env["identity"]["toolset"] == "claude-code"
    assert {t["name"] for t in env["task_tools"]} == CLAUDE_CODE


def test_unknown_toolset_in_the_config_file_exits_2_naming_file_and_key(
    tmp_path: Path, orsgen_cli
) -> None:
    config = _config(tmp_path, "vim")
    out = tmp_path / "sandbox_cfg"
    run = orsgen_cli([str(SANDBOX_ENV), "--config", str(config), "-o", str(out)])
    assert run.code == 2
    assert f"{config}: toolset: unknown toolset 'vim'" in " ".join(run.stderr.split())
    for name in ("backsearch", "claude-code", "codex", "gemini-cli", "hermes", "openclaw"):
        assert name in run.stderr
    assert not out.exists()

"""Semantic versions, CHANGES.md, check --live and config, against a real local environment."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orsgen.snapshot.stored import parse_environment
from orsgen.generate.pipeline.versioning import Classification, bump
from orsgen.generate.pipeline.versioning import classify as classify_environments


def classify(old: dict[str, Any], new: dict[str, Any]) -> Classification:
    """Versioning compares typed sections; these tests write them as JSON."""
    return classify_environments(parse_environment(old), parse_environment(new))


ROOT = Path(__file__).resolve().parents[1]
DRIFT_ENV = ROOT / "tests" / "envs" / "drift_env.py"


def _tool(
    name: str, props: dict[str, Any], required: list[str], description: str = "d"
) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "input_schema": {"type": "object", "properties": props, "required": required},
    }


BASE = {
    "tools": [
        _tool(
            "write",
            {
                "path": {"type": "string", "description": "p"},
                "mode": {"enum": ["a", "w"], "default": "w"},
                "size": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            },
            ["path"],
        ),
        _tool("read", {"path": {"type": "string"}}, ["path"]),
    ],
    "task_tools": [],
}


def _edit(fn: Any) -> dict[str, Any]:
    env = copy.deepcopy(BASE)
    fn(env)
    return env


def _props(env: dict[str, Any], tool: int = 0) -> dict[str, Any]:
    return env["tools"][tool]["input_schema"]["properties"]


CASES = [
    ("tool removed", lambda e: e["tools"].pop(1), "major"),
    (
        "required param added",
        lambda e: (
            _props(e).update(force={"type": "boolean"}),
            e["tools"][0]["input_schema"]["required"].append("force"),
        ),
        "major",
    ),
    ("param removed", lambda e: _props(e).pop("size"), "major"),
    ("type narrowed", lambda e: _props(e).update(size={"type": "integer"}), "major"),
    (
        "type changed",
        lambda e: _props(e).update(path={"type": "integer", "description": "p"}),
        "major",
    ),
    (
        "enum value removed",
        lambda e: _props(e).update(mode={"enum": ["w"], "default": "w"}),
        "major",
    ),
    (
        "optional became required",
        lambda e: e["tools"][0]["input_schema"]["required"].append("mode"),
        "major",
    ),
    ("tool added", lambda e: e["task_tools"].append(_tool("hint", {}, [])), "minor"),
    ("optional param added", lambda e: _props(e).update(force={"type": "boolean"}), "minor"),
    (
        "enum value added",
        lambda e: _props(e).update(mode={"enum": ["a", "w", "x"], "default": "w"}),
        "minor",
    ),
    (
        "type widened",
        lambda e: _props(e).update(
            path={"anyOf": [{"type": "string"}, {"type": "null"}], "description": "p"}
        ),
        "minor",
    ),
    (
        "required became optional",
        lambda e: e["tools"][0]["input_schema"].update(required=[]),
        "minor",
    ),
    ("tool description", lambda e: e["tools"][1].update(description="new words"), "patch"),
    ("param description", lambda e: _props(e)["path"].update(description="q"), "patch"),
    ("identical", lambda e: None, "unchanged"),
]


@pytest.mark.parametrize("name,edit,level", CASES, ids=[c[0] for c in CASES])
def test_classification_rules(name: str, edit: Any, level: str) -> None:
    result = classify(BASE, _edit(edit))
    assert result.level == level, result.report()
    if level != "unchanged":
        assert result.changes and all(c.tool for c in result.changes if c.level == level)


# A nullable object reached through a $ref, as pydantic writes an optional nested model.
NESTED_SCHEMA: dict[str, Any] = {
    "$defs": {
        "Filters": {
            "type": "object",
            "properties": {
                "kind": {"enum": ["book", "paper"], "description": "k"},
                "year": {"type": "integer"},
            },
            "required": ["kind"],
        }
    },
    "type": "object",
    "properties": {"filters": {"anyOf": [{"$ref": "#/$defs/Filters"}, {"type": "null"}]}},
}


def _nested(edit: Any) -> dict[str, Any]:
    schema = copy.deepcopy(NESTED_SCHEMA)
    edit(schema["$defs"]["Filters"]["properties"], schema["$defs"]["Filters"])
    return {
        "tools": [{"name": "search", "description": "d", "input_schema": schema}],
        "task_tools": [],
    }


NESTED_CASES = [
    (
        "enum value removed",
        lambda p, f: p.update(kind={"enum": ["book"], "description": "k"}),
        "major",
        "parameter 'filters.kind' of tool 'search': enum value 'paper' removed",
    ),
    (
        "field removed",
        lambda p, f: p.pop("year"),
        "major",
        "parameter 'filters.year' of tool 'search' removed",
    ),
    (
        "field became required",
        lambda p, f: f.update(required=["kind", "year"]),
        "major",
        "parameter 'filters.year' of tool 'search' became required",
    ),
    (
        "optional field added",
        lambda p, f: p.update(tag={"type": "string"}),
        "minor",
        "optional parameter 'filters.tag' added to tool 'search'",
    ),
    (
        "field description",
        lambda p, f: p["kind"].update(description="kind of result"),
        "patch",
        "description of parameter 'filters.kind' of tool 'search' changed",
    ),
]


@pytest.mark.parametrize("name,edit,level,message", NESTED_CASES, ids=[c[0] for c in NESTED_CASES])
def test_fields_of_an_optional_nested_object_are_compared(
    name: str, edit: Any, level: str, message: str
) -> None:
    result = classify(_nested(lambda p, f: None), _nested(edit))
    assert result.level == level, result.report()
    assert [c.message for c in result.changes] == [message]


def test_bump() -> None:
    assert bump("1.4.2", "major") == "2.0.0"
    assert bump("1.4.2", "minor") == "1.5.0"
    assert bump("1.4.2", "patch") == "1.4.3"
    assert bump("1.4.2", "unchanged") == "1.4.2"


def _orsgen(*args: str, variant: str = "v1", cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ORSGEN_DRIFT_VARIANT": variant, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "orsgen", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=180,
    )


def _version(pkg: Path) -> str:
    text = (pkg / "version.py").read_text()
    return text.split("__version__ = ")[1].split("\n")[0].strip('"')


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_versions_changes_and_live_drift(tmp_path: Path) -> None:
    pkg = tmp_path / "drift"
    first = _orsgen(str(DRIFT_ENV), "-o", str(pkg), variant="v1")
    assert first.returncode == 0, first.stderr
    assert _version(pkg) == "1.0.0"
    assert _orsgen("check", str(pkg), "--live", variant="v1").returncode == 0

    # v2 adds an optional parameter: live drift is additive.
    live = _orsgen("check", str(pkg), "--live", variant="v2")
    assert live.returncode == 1
    assert "'encoding'" in live.stdout and "read:" in live.stdout and "additive" in live.stdout
    assert (
        _orsgen("check", str(pkg), "--live", "--fail-on", "breaking", variant="v2").returncode == 0
    )
    assert _orsgen(str(DRIFT_ENV), "-o", str(pkg), variant="v2").returncode == 0
    assert _version(pkg) == "1.1.0"
    changes = (pkg / "CHANGES.md").read_text()
    assert changes.index("## 1.1.0") < changes.index("## 1.0.0")
    assert "optional parameter 'encoding' added to tool 'read'" in changes

    # v3 removes a tool: breaking, even with --fail-on breaking.
    live = _orsgen("check", str(pkg), "--live", "--fail-on", "breaking", variant="v3")
    assert live.returncode == 1 and "tool 'write' removed" in live.stdout
    assert _orsgen(str(DRIFT_ENV), "-o", str(pkg), variant="v3").returncode == 0
    assert _version(pkg) == "2.0.0"
    assert "def write(" not in (pkg / "adapter.py").read_text()

    # v4 rewords a description: patch; v5 changes a type: major.
    assert _orsgen(str(DRIFT_ENV), "-o", str(pkg), variant="v4").returncode == 0
    assert _version(pkg) == "2.0.1"
    assert _orsgen(str(DRIFT_ENV), "-o", str(pkg), variant="v5").returncode == 0
    assert _version(pkg) == "3.0.0"
    assert "type changed from str to int" in (pkg / "CHANGES.md").read_text()

    # The same live target again: unchanged, version kept, offline check clean.
    assert _orsgen(str(DRIFT_ENV), "-o", str(pkg), variant="v5").returncode == 0
    assert _version(pkg) == "3.0.0"
    assert _orsgen("check", str(pkg)).returncode == 0

    # Offline regeneration from the stored snapshot reproduces every byte, with no server.
    copy_dir = tmp_path / "drift"  # same directory name, so the same package name
    offline = tmp_path / "offline" / "drift"
    offline.parent.mkdir()  # -o never makes directories outside the working tree
    assert _orsgen(str(pkg / "snapshot.json"), "-o", str(offline)).returncode == 0
    for path in sorted(copy_dir.iterdir()):
        if path.is_file():
            assert (offline / path.name).read_bytes() == path.read_bytes(), path.name


# 1.0: packages whose methods called ``_fail(message)``, which this runtime no longer serves.
@pytest.mark.parametrize("wanted", ["7.3", "1.0"])
def test_runtime_incompatibility_message(tmp_path: Path, wanted: str) -> None:
    from orsgen.runtime import RUNTIME_VERSION

    pkg = tmp_path / "old"
    assert (
        _orsgen(str(ROOT / "generated" / "echo" / "snapshot.json"), "-o", str(pkg)).returncode == 0
    )
    version = pkg / "version.py"
    current = "requires_" + RUNTIME_VERSION.replace(".", "_")
    text = version.read_text()
    assert current in text
    version.write_text(text.replace(current, "requires_" + wanted.replace(".", "_")))
    proc = subprocess.run(
        [sys.executable, "-c", "import old"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}:{ROOT}"},
        timeout=60,
    )
    assert proc.returncode != 0
    assert f"runtime {wanted}" in proc.stderr and "regenerate" in proc.stderr


def test_config_include_and_validation(tmp_path: Path) -> None:
    snapshot = ROOT / "generated" / "echo" / "snapshot.json"
    (tmp_path / "pyproject.toml").write_text(
        '[tool.orsgen.packages."gen/echo"]\nclass_name = "Echo"\ninclude = ["echo"]\n'
    )
    ok = _orsgen(str(snapshot), "-o", "gen/echo", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    adapter = (tmp_path / "gen" / "echo" / "adapter.py").read_text()
    assert "class Echo(" in adapter and "def echo(" in adapter and "def hint(" not in adapter
    assert _orsgen("check", "gen/echo", cwd=tmp_path).returncode == 0  # recorded in the snapshot

    (tmp_path / "pyproject.toml").write_text('[tool.orsgen.packages."gen/echo"]\nclas_name = "X"\n')
    bad_key = _orsgen(str(snapshot), "-o", "gen/echo", cwd=tmp_path)
    assert bad_key.returncode == 2 and "clas_name" in bad_key.stderr

    (tmp_path / "pyproject.toml").write_text(
        '[tool.orsgen.packages."gen/echo"]\nexclude = ["ecoh"]\n'
    )
    bad_tool = _orsgen(str(snapshot), "-o", "gen/echo", cwd=tmp_path)
    assert bad_tool.returncode == 2 and "exclude: unknown tool 'ecoh'" in bad_tool.stderr


def test_config_renames_reach_the_wire(tmp_path: Path, echo_server: Any) -> None:
    import importlib

    snapshot = ROOT / "generated" / "echo" / "snapshot.json"
    (tmp_path / "orsgen.toml").write_text(
        '[packages."renamed_echo"]\n'
        'rename = { tools = { hint = "get_hint" }, params = { echo = { text = "word" } } }\n'
    )
    proc = _orsgen(str(snapshot), "-o", "renamed_echo", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("renamed_echo")
    finally:
        sys.path.remove(str(tmp_path))
    cls = module.EchoEnv
    assert cls.WIRE_NAMES["get_hint"] == ("hint", {})  # ``level`` keeps its name
    assert cls.WIRE_NAMES["echo"][1]["word"] == "text"
    env = cls(base_url=echo_server.url, prefetch=False)
    try:
        env.reset(task_index=0)
        assert env.echo(word="apple") == "echo: apple" and env.reward == 1.0
    finally:
        env.close()

    (tmp_path / "orsgen.toml").write_text(
        '[packages."renamed_echo"]\nrename = { tools = { hint = "reset" } }\n'
    )
    bad = _orsgen(str(snapshot), "-o", "renamed_echo", cwd=tmp_path)
    assert (
        bad.returncode == 1 and "rename.tools" in bad.stderr and "'reset' is reserved" in bad.stderr
    )


def _tool_methods(pkg: Path) -> set[str]:
    adapter = (pkg / "adapter.py").read_text()
    return {name for name in ("echo", "hint") if f"    def {name}(" in adapter}


@pytest.mark.slow
def test_a_configuration_change_is_versioned_and_checked(tmp_path: Path) -> None:
    """The README's own config example, as a newcomer tried it (issue 16, item 8): the
    configuration in force decides the package's tools, a change to it is versioned like
    a change of the environment, and ``orsgen check`` reports a package it no longer matches."""
    snapshot = ROOT / "generated" / "echo" / "snapshot.json"
    pyproject = tmp_path / "pyproject.toml"
    pkg = tmp_path / "gen" / "echo"
    first = _orsgen(str(snapshot), "-o", "gen/echo", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    golden = json.loads(snapshot.read_text(encoding="utf-8"))["package"]["version"]
    assert _version(pkg) == golden and _tool_methods(pkg) == {"echo", "hint"}

    # Excluding a tool removes a method: breaking, recorded, and counted everywhere.
    pyproject.write_text('[tool.orsgen.packages."gen/echo"]\nexclude = ["hint"]\n')
    assert _orsgen("check", "gen/echo", cwd=tmp_path).returncode == 1  # not yet regenerated
    excluded = _orsgen(str(pkg / "snapshot.json"), "-o", "gen/echo", cwd=tmp_path)
    assert excluded.returncode == 0, excluded.stderr
    assert _tool_methods(pkg) == {"echo"} and _version(pkg) == "2.0.0"
    assert "EchoEnv, 1 tool, version 2.0.0" in excluded.stderr
    changes = (pkg / "CHANGES.md").read_text()
    assert "## 2.0.0 (breaking)" in changes and "tool 'hint' removed" in changes
    assert _orsgen("check", "gen/echo", cwd=tmp_path).returncode == 0

    # `exclude = []` is the configuration in force: the tool comes back, as an addition.
    pyproject.write_text('[tool.orsgen.packages."gen/echo"]\nexclude = []\n')
    stale = _orsgen("check", "gen/echo", cwd=tmp_path)
    assert stale.returncode == 1
    assert (
        "exclude" in stale.stderr and '["hint"]' in stale.stderr and str(pyproject) in stale.stderr
    )
    back = _orsgen(str(pkg / "snapshot.json"), "-o", "gen/echo", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert _tool_methods(pkg) == {"echo", "hint"} and _version(pkg) == "2.1.0"
    assert "EchoEnv, 2 tools, version 2.1.0" in back.stderr
    assert "tool 'hint' added" in (pkg / "CHANGES.md").read_text()
    assert _orsgen("check", "gen/echo", cwd=tmp_path).returncode == 0

    # Deleting the setting (the table stays, setting something else) is the same.
    pyproject.write_text('[tool.orsgen.packages."gen/echo"]\nexclude = ["hint"]\n')
    assert _orsgen(str(pkg / "snapshot.json"), "-o", "gen/echo", cwd=tmp_path).returncode == 0
    assert _tool_methods(pkg) == {"echo"} and _version(pkg) == "3.0.0"
    pyproject.write_text('[tool.orsgen.packages."gen/echo"]\nclass_name = "EchoEnv"\n')
    assert _orsgen(str(pkg / "snapshot.json"), "-o", "gen/echo", cwd=tmp_path).returncode == 0
    assert _tool_methods(pkg) == {"echo", "hint"} and _version(pkg) == "3.1.0"


def test_a_configured_rename_is_a_breaking_change(tmp_path: Path) -> None:
    snapshot = ROOT / "generated" / "echo" / "snapshot.json"
    (tmp_path / "orsgen.toml").write_text(
        '[packages."renamed"]\nrename = { tools = { hint = "get_hint" } }\n'
    )
    proc = _orsgen(str(snapshot), "-o", "renamed", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _version(tmp_path / "renamed") == "2.0.0"
    assert (
        "tool 'hint' renamed: 'hint' -> 'get_hint'"
        in (tmp_path / "renamed" / "CHANGES.md").read_text()
    )

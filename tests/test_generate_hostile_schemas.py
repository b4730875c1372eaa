"""Hostile-but-legal tool schemas, served by a real ORS server (tests/envs/hostile_env.py).

Pass criterion per case: importable, mypy --strict-clean code in which every method,
called with valid input, reaches the server under its original wire tool name and
wire parameter names; or a clear refusal that names the tool.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import ors_server
from conftest import failed
from orsgen.cli import main as orsgen_main
from orsgen.generate import generate
from orsgen.generate.pipeline.run import Request, run
from orsgen.snapshot.model import build
from orsgen.snapshot.stored import stored_form
from orsgen.generate.pipeline.write import write_package
from wire_map import wire_params

ROOT = Path(__file__).resolve().parents[1]
HOSTILE_ENV = ROOT / "tests" / "envs" / "hostile_env.py"
sys.path.insert(0, str(HOSTILE_ENV.parent))
import hostile_env  # noqa: E402

PACKAGE = {"name": "hostile", "class_name": "HostileEnv", "split": "train", "version": "1.0.0"}


@pytest.fixture(scope="module")
def server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(HOSTILE_ENV, envs=["HostileEnv", "RefusedEnv"])


@pytest.fixture(scope="module")
def generated(server: ors_server.RunningServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("hostile")
    request = Request(server.url, base / "hostile", env_name="hostileenv", class_name="HostileEnv")
    result = run(request)
    assert result.written, [d.format() for d in result.diagnostics]
    sys.path.insert(0, str(base))
    module = importlib.import_module("hostile")
    return {
        "module": module,
        "dir": base,
        "snapshot": stored_form(result.snapshot),
        "diagnostics": result.diagnostics,
        "files": result.files,
    }


def _specs(snapshot: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    env = snapshot["environment"]
    return {t["name"]: t for t in [*env["tools"], *env["task_tools"]]}


def test_no_tool_or_parameter_is_dropped(generated: Any) -> None:
    wire_names = generated["module"].HostileEnv.WIRE_NAMES
    specs = _specs(generated["snapshot"])
    served = {t["name"] for t in [*hostile_env.HOSTILE_TOOLS, *hostile_env.HOSTILE_TASK_TOOLS]}
    assert set(specs) == served
    assert {wire for wire, _ in wire_names.values()} == served
    for method, (wire, _differing) in wire_names.items():
        props = specs[wire]["input_schema"].get("properties", {})
        assert set(wire_params(generated["module"].HostileEnv, method).values()) == set(props), wire
        assert callable(getattr(generated["module"].HostileEnv, method))


def test_every_rename_is_a_warning_naming_both_names(generated: Any) -> None:
    messages = [d for d in generated["diagnostics"] if d.level == "warning"]
    for method, (wire, params) in generated["module"].HostileEnv.WIRE_NAMES.items():
        if method != wire:
            assert any(
                d.tool == wire and d.pointer == "" and repr(method) in d.message for d in messages
            ), wire
            # Named once per line, by the "tool '...':" prefix (a very long name is clipped there).
            assert all(
                d.format().count(repr(wire)) <= 1
                for d in messages
                if d.tool == wire and d.pointer == "" and repr(method) in d.message
            ), wire
        for py, pw in params.items():
            if py != pw:
                assert any(
                    d.tool == wire
                    and d.pointer.startswith("/properties/")
                    and repr(py) in d.message
                    for d in messages
                ), (wire, pw)


def test_warnings_for_fallbacks_carry_pointers(generated: Any) -> None:
    by_pointer = {(d.tool, d.pointer): d.message for d in generated["diagnostics"]}
    assert "unknown type" in by_pointer[("typed", "/properties/weird/type")]
    assert "never fetches" in by_pointer[("typed", "/properties/remote/$ref")]
    assert "points at nothing" in by_pointer[("typed", "/properties/dangling/$ref")]
    assert "mutable default" in by_pointer[("defaults", "/properties/items/default")]
    assert "does not fit" in by_pointer[("defaults", "/properties/wrong/default")]


@pytest.mark.slow  # a type-checker run
def test_generated_code_is_mypy_strict_clean(generated: Any) -> None:
    env = {**os.environ, "MYPYPATH": str(generated["dir"])}
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "-p", "hostile"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_module_holds_only_declarations(generated: Any) -> None:
    from orsgen.generate.render import self_check

    for name, text in generated["files"].items():
        if name.endswith(".py"):
            self_check(name, text)
    assert "pwned" not in "".join(generated["files"][n] for n in ("models.py",))


def test_trl_sees_every_parameter_and_nothing_injected(generated: Any) -> None:
    from transformers.utils import get_json_schema

    cls = generated["module"].HostileEnv
    for method, (wire, _differing) in cls.WIRE_NAMES.items():
        schema = get_json_schema(getattr(cls, method))["function"]
        assert schema["name"] == method
        assert set(schema["parameters"]["properties"]) == set(wire_params(cls, method)), wire
    nasty = get_json_schema(cls.nasty_text)["function"]
    assert "evil" not in nasty["parameters"]["properties"]
    assert "fake" not in nasty["parameters"]["properties"]
    assert nasty["parameters"]["properties"]["choice"]["enum"][0] == hostile_env.NASTY_TEXT


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    for _ in range(10):
        if isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str):
            ref = schema["$ref"]
            node: Any = root
            for part in ref[1:].split("/")[1:] if ref.startswith("#") else ["\0"]:
                node = node.get(part) if isinstance(node, Mapping) else None
            schema = node if isinstance(node, Mapping) else {}
        elif isinstance(schema, Mapping) and "allOf" in schema:
            merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
            for branch in schema["allOf"]:
                branch = _resolve(branch, root)
                merged["properties"].update(branch.get("properties", {}))
                merged["required"] += branch.get("required", [])
            schema = merged
        else:
            return schema
    return {}


def example(schema: Any, root: Mapping[str, Any], avoid: Any = ..., depth: int = 0) -> Any:
    """A valid value for ``schema``, different from ``avoid`` (the default) when possible."""
    schema = _resolve(schema, root)
    if depth > 3 and isinstance(schema, Mapping) and schema.get("type") in ("array", "object"):
        return [] if schema.get("type") == "array" else {}
    if not isinstance(schema, Mapping) or not schema:
        return "anything"
    values = schema.get("enum") or ([schema["const"]] if "const" in schema else None)
    if values:
        choices = [v for v in values if v is not None and v != avoid] or values
        return choices[0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            branch = next(b for b in schema[key] if _resolve(b, root).get("type") != "null")
            return example(branch, root, avoid, depth)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind is None and "properties" in schema:
        kind = "object"
    if kind == "string":
        return "v" if avoid != "v" else "w"
    if kind == "integer":
        return 7 if avoid != 7 else 8
    if kind == "number":
        return 2.5
    if kind == "boolean":
        return avoid is not True
    if kind == "array":
        if schema.get("prefixItems"):
            return [example(s, root, ..., depth + 1) for s in schema["prefixItems"]]
        return [example(schema.get("items", {}), root, ..., depth + 1)]
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: example(v, root, ..., depth + 1) for k, v in props.items()}
    return "anything"


def test_every_method_reaches_the_server_under_its_wire_names(
    generated: Any, server: ors_server.RunningServer
) -> None:
    cls = generated["module"].HostileEnv
    specs = _specs(generated["snapshot"])
    env = cls(base_url=server.url, env_name="hostileenv")
    env.reset(task_index=0)
    try:
        for method, (wire, _differing) in cls.WIRE_NAMES.items():
            root = specs[wire]["input_schema"]
            props = root.get("properties", {})
            kwargs: dict[str, Any] = {}
            expected: dict[str, Any] = {}
            params = wire_params(cls, method)
            for py, pw in params.items():
                value = example(props[pw], root, props[pw].get("default", ...))
                kwargs[py] = value
                expected[pw] = value
            out = getattr(env, method)(**kwargs)
            assert not out.startswith("Error"), (wire, out)
            echoed = json.loads(out)
            assert echoed["name"] == wire
            assert echoed["input"] == json.loads(json.dumps(expected)), wire
            # Left-out optional arguments are not sent at all.
            optional = [
                p
                for p in inspect.signature(getattr(cls, method)).parameters.values()
                if p.default is not inspect.Parameter.empty
            ]
            required = {py: kwargs[py] for py in kwargs if py not in {p.name for p in optional}}
            echoed = json.loads(getattr(env, method)(**required))
            assert set(echoed["input"]) == {params[py] for py in required}, wire
    finally:
        env.close()


def test_invalid_nested_arguments_fail_without_a_round_trip(
    generated: Any, server: ors_server.RunningServer
) -> None:
    cls = generated["module"].HostileEnv
    env = cls(base_url=server.url, env_name="hostileenv")
    env.reset(task_index=0)
    try:
        good = env.nested(opts={"mode": "r", "paths": [{"p": "a"}], "class": 3})
        assert json.loads(good)["input"]["opts"]["class"] == 3
        server.reset_counts()
        bad_cases = [
            ({"paths": []}, "mode"),  # a required field is missing
            ({"mode": "x"}, "'r' or 'w'"),  # not an enum value
            ({"mode": "r", "paths": [{"p": 5}]}, "opts.paths[0].p"),  # wrong nested type
            ({"mode": "r", "class": "three"}, "opts.class"),
        ]
        for opts, needle in bad_cases:
            out = str(failed(env.nested, opts=opts))
            assert out.startswith("tool 'nested' rejected the call: "), out
            assert "opts" in out and needle in out, out
            assert env.rewards[-1] is None
        assert not any(path.endswith("/call") for path in server.requests())
    finally:
        env.close()


def test_a_tool_that_cannot_be_typed_is_refused_by_name(
    server: ors_server.RunningServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "refused"
    result = run(Request(server.url, out, env_name="refusedenv"))
    errors = [d for d in result.diagnostics if d.level == "error"]
    assert [d.tool for d in errors] == ["scalar_args"]
    assert "must be an object" in errors[0].message and not result.files
    assert result.refused == "errors" and not out.exists()
    assert orsgen_main([server.url, "--env-name", "refusedenv", "-o", str(out), "-q"]) == 1
    assert "scalar_args" in capsys.readouterr().err and not out.exists()


def test_fail_on_warning_makes_renames_fatal(generated: Any, tmp_path: Path) -> None:
    snap = generated["dir"] / "hostile" / "snapshot.json"
    out = tmp_path / "strict"
    assert orsgen_main([str(snap), "-o", str(out), "-q", "--fail-on-warning"]) == 1
    assert not out.exists()


def _scale_tool(i: int, nparams: int, nested: bool) -> dict[str, Any]:
    kinds: list[dict[str, Any]] = [
        {"type": "string", "description": "text"},
        {"type": "integer", "default": 1},
        {"enum": ["a", "b"]},
        {"type": "array", "items": {"type": "number"}},
        {"anyOf": [{"type": "boolean"}, {"type": "null"}], "default": None},
        (
            {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
            if nested
            else {"type": "string"}
        ),
    ]
    props = {f"p{j}": kinds[j % len(kinds)] for j in range(nparams)}
    return {
        "name": f"tool-{i}",
        "description": f"Tool {i}.",
        "input_schema": {"type": "object", "properties": props, "required": ["p0"]},
    }


@pytest.mark.slow
def test_scale_600_tools_and_a_300_parameter_tool_pass_mypy(tmp_path: Path) -> None:
    """Figures (timings) are recorded in docs/generating.md; this checks the outcome only."""
    tools = [_scale_tool(i, 6, i % 10 == 0) for i in range(600)] + [_scale_tool(600, 300, True)]
    environment = {
        "identity": {"env_name": "scale", "deployment": None},
        "target": {"kind": "file", "value": "x.py"},
        "splits": [],
        "tools": tools,
        "task_tools": [],
    }
    result = generate(build(environment, {**PACKAGE, "name": "scale", "class_name": "ScaleEnv"}))
    unexpected = [d.format() for d in result.diagnostics if "is named" not in d.message]
    assert result.ok and not unexpected, unexpected[:5]
    write_package(tmp_path / "scale", result.files)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "-p", "scale"],
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-2000:]

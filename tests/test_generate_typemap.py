"""Unit tests of orsgen.generate.typemap: JSON Schema -> the richest hint get_json_schema reads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orsgen.generate import ir
from orsgen.generate.schema_refs import TypeContext
from orsgen.generate.typemap import field_of, type_of

ROOT: dict[str, Any] = {
    "$defs": {
        "Level": {"enum": ["low", "high"]},
        "Node": {
            "type": "object",
            "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
        },
        "Base": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        "Loop": {"$ref": "#/$defs/Loop"},
    },
    "definitions": {"Color": {"enum": ["red", "green"]}},
}


def node(schema: Any) -> tuple[ir.Node, list[str]]:
    ctx = TypeContext(root=ROOT, tool="t")
    found, nullable = type_of(ctx, schema, "/properties/p")
    return ir.nullable(found, nullable), [d.message for d in ctx.diagnostics]


def hint(schema: Any) -> tuple[str, list[str]]:
    found, warnings = node(schema)
    return ir.render(found), warnings


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, "str"),
        ({"type": "integer"}, "int"),
        ({"type": "number"}, "float"),
        ({"type": "boolean"}, "bool"),
        ({"enum": ["a", "b"]}, "Literal['a', 'b']"),
        ({"enum": ["a", 1, True]}, "Literal['a', 1, True]"),
        ({"enum": [1, True]}, "Literal[1, True]"),  # equal in Python, distinct in JSON
        ({"enum": ["a", None]}, "Literal['a'] | None"),
        ({"const": "x"}, "Literal['x']"),
        ({"enum": [0.5, 1.5]}, "float"),
        ({"type": "array", "items": {"type": "string"}}, "list[str]"),
        ({"type": "array"}, "list[Any]"),
        ({"type": "array", "items": {"enum": ["a"]}}, "list[Literal['a']]"),
        (
            {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "integer"}],
                "items": False,
            },
            "tuple[str, int]",
        ),
        (
            {
                "type": "array",
                "items": [{"type": "string"}, {"type": "integer"}],
                "additionalItems": False,
            },
            "tuple[str, int]",
        ),
        ({"type": "object", "additionalProperties": {"type": "number"}}, "dict[str, float]"),
        ({"type": "object"}, "dict[str, Any]"),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "int | None"),
        ({"type": ["string", "null"]}, "str | None"),
        ({"type": "string", "nullable": True}, "str | None"),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "str | int"),
        (
            {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
            "str | int | None",
        ),
        ({"type": ["string", "integer"]}, "str | int"),
        ({"$ref": "#/$defs/Level"}, "Literal['low', 'high']"),
        ({"$ref": "#/definitions/Color"}, "Literal['red', 'green']"),
        ({"$ref": "#/$defs/Node"}, "dict[str, Any]"),
        (
            {"allOf": [{"$ref": "#/$defs/Base"}, {"properties": {"b": {"type": "integer"}}}]},
            "dict[str, Any]",
        ),
        ({"allOf": [{"type": "string"}, {"description": "x"}]}, "str"),
        ({}, "Any"),
        (True, "Any"),
        ({"description": "untyped"}, "Any"),
    ],
)
def test_hints(schema: Any, expected: str) -> None:
    text, warnings = hint(schema)
    assert text == expected
    assert warnings == []


@pytest.mark.parametrize(
    ("schema", "needle"),
    [
        ({"type": "quaternion"}, "unknown type"),
        ({"$ref": "https://example.invalid/s.json"}, "never fetches"),
        ({"$ref": "#/$defs/Missing"}, "points at nothing"),
        ({"$ref": "#/$defs/Loop"}, ""),
        ({"enum": [{"a": 1}, [1]]}, "cannot express"),
        (["not", "a", "schema"], "not an object"),
    ],
)
def test_fallbacks_are_any_with_a_warning(schema: Any, needle: str) -> None:
    text, warnings = hint(schema)
    assert text in ("Any", "dict[str, Any]")
    if needle:
        assert any(needle in w for w in warnings), warnings


def test_remote_ref_is_never_fetched(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("orsgen tried to open a network connection while typing a schema")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    from orsgen.generate.model_schema import ModelRequest
    from orsgen.generate.models import build_models

    schema = {
        "type": "object",
        "properties": {
            "o": {"type": "object", "properties": {"r": {"$ref": "http://127.0.0.1:9/remote.json"}}}
        },
    }
    text, _ = hint(schema["properties"]["o"]["properties"]["r"])
    assert text == "Any"
    field = field_of(TypeContext(root=schema, tool="t"), "o", schema["properties"]["o"], "", False)
    built = build_models([ModelRequest("t", "t", (field,), {"o": "o"})])
    assert "t" in built.models


def test_deep_nesting_terminates() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(40):
        schema = {"type": "array", "items": schema}
    text, warnings = hint(schema)
    assert text.startswith("list[") and "Any" in text
    assert any("deeply" in w for w in warnings)


# Literal ints beyond a signed 64-bit range fail mypy ("arbitrary expressions"); JSON floats
# (including NaN and the infinities Python's json reads) never fit a Literal at all.
@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([10**40, -1], "int"),
        ([-(10**40)], "int"),
        ([2**63], "int"),
        ([-(2**63)], "int"),
        ([2**63 - 1, -(2**63 - 1)], "Literal[9223372036854775807, -9223372036854775807]"),
        ([10**40, 0.5], "float"),
        ([json.loads("NaN"), json.loads("Infinity"), json.loads("-Infinity")], "float"),
        ([10**40, None], "int | None"),
        (["NaN", "inf", "-Infinity"], "Literal['NaN', 'inf', '-Infinity']"),
    ],
)
def test_enum_values_a_literal_cannot_hold(values: list[Any], expected: str) -> None:
    text, warnings = hint({"enum": values})
    assert text == expected
    assert warnings == []
    # The hint alone hides the allowed values, so the description must list them.
    assert ir.has_structure(node({"enum": values})[0]) == ("Literal" not in expected)


def test_const_too_large_for_a_literal_is_an_int() -> None:
    assert hint({"const": 10**40}) == ("int", [])


def test_huge_int_mixed_with_a_string_is_any_with_a_warning() -> None:
    text, warnings = hint({"enum": ["a", 10**40]})
    assert text == "Any"
    assert any("cannot express" in w for w in warnings)


def test_boundary_literals_type_check(tmp_path: Path) -> None:
    """The hints above, written out, pass both checkers (which is why the bound exists)."""
    values = [[2**63 - 1, -(2**63 - 1)], [10**40, -1], [-(2**63)], [json.loads("NaN")]]
    lines = ["from typing import Literal", ""]
    for i, v in enumerate(values):
        value = "float('nan')" if v[0] != v[0] else repr(v[0])
        lines.append(f"x{i}: {hint({'enum': v})[0]} = {value}")
    (tmp_path / "hints.py").write_text("\n".join(lines) + "\n")
    (tmp_path / "pyrightconfig.json").write_text('{"typeCheckingMode": "strict"}')
    for cmd in (
        ["mypy", "--strict", "--no-incremental"],
        ["basedpyright", "--pythonpath", sys.executable],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", *cmd, "hints.py"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


# Descriptions and models derive from the same node as the hint.
@pytest.mark.parametrize(
    ("schema", "structure"),
    [
        (
            {
                "anyOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                    {"type": "object", "properties": {"b": {"type": "integer"}}},
                ]
            },
            "{a: str (required)} or {b: int}",
        ),
        ({"type": "array", "items": {"enum": [0.5, 1.5]}}, "list of 0.5 | 1.5"),
        ({"$ref": "#/$defs/Node"}, "{kids: list of (recursive #/$defs/Node)}"),
        ({"anyOf": [{"$ref": "#/$defs/Base"}, {"type": "null"}]}, "{a: str (required)} or null"),
        (
            {
                "type": "object",
                "properties": {
                    "m": {"type": "object", "additionalProperties": {"type": "integer"}},
                    "t": {
                        "type": "array",
                        "prefixItems": [{"type": "string"}, {"$ref": "#/$defs/Level"}],
                        "items": False,
                    },
                },
            },
            '{m: map of str to int, t: [str, "low" | "high"]}',
        ),
        (
            {"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {}]},
            "{a: str} or any",
        ),
        ({"type": "array", "items": {"type": "string"}}, None),
        ({"enum": ["a", "b"]}, None),
    ],
)
def test_structure_is_described_from_the_node(schema: Any, structure: str | None) -> None:
    from orsgen.generate.describe import describe

    found, _ = node(schema)
    assert ir.has_structure(found) == (structure is not None)
    if structure is not None:
        assert describe(found) == structure


def test_each_shape_of_a_union_of_objects_is_validated() -> None:
    from orsgen.generate.model_schema import ModelRequest
    from orsgen.generate.models import build_models

    schema = {
        "anyOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]},
        ]
    }
    field = field_of(TypeContext(root=ROOT, tool="t"), "u", schema, "", True)
    assert ir.render(field.type) == "dict[str, Any]" and ir.has_model(field.type)
    built = build_models([ModelRequest("t", "t", (field,), {"u": "u"})])
    namespace: dict[str, Any] = {}
    exec(built.body, namespace)  # noqa: S102 - source generated just above
    model = namespace[built.models["t"].class_name]
    model.model_rebuild(_types_namespace=namespace)
    model.model_validate({"u": {"a": "x"}})
    model.model_validate({"u": {"b": 1}})
    with pytest.raises(Exception, match="validation error"):
        model.model_validate({"u": {"c": 1}})

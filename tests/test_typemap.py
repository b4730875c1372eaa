"""Unit tests of orsgen.generate.typemap: JSON Schema -> the richest hint get_json_schema reads."""

from __future__ import annotations

from typing import Any

import pytest

from orsgen.generate.typemap import TypeContext, hint_for

ROOT: dict[str, Any] = {
    "$defs": {
        "Level": {"enum": ["low", "high"]},
        "Node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}},
        "Base": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        "Loop": {"$ref": "#/$defs/Loop"},
    },
    "definitions": {"Color": {"enum": ["red", "green"]}},
}


def hint(schema: Any) -> tuple[str, list[str]]:
    ctx = TypeContext(root=ROOT, tool="t")
    text = hint_for(ctx, schema, "/properties/p")
    return text, [d.message for d in ctx.diagnostics]


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
        ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
         "tuple[str, int]"),
        ({"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": False},
         "tuple[str, int]"),
        ({"type": "object", "additionalProperties": {"type": "number"}}, "dict[str, float]"),
        ({"type": "object"}, "dict[str, Any]"),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "int | None"),
        ({"type": ["string", "null"]}, "str | None"),
        ({"type": "string", "nullable": True}, "str | None"),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "str | int"),
        ({"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}, "str | int | None"),
        ({"type": ["string", "integer"]}, "str | int"),
        ({"$ref": "#/$defs/Level"}, "Literal['low', 'high']"),
        ({"$ref": "#/definitions/Color"}, "Literal['red', 'green']"),
        ({"$ref": "#/$defs/Node"}, "dict[str, Any]"),
        ({"allOf": [{"$ref": "#/$defs/Base"}, {"properties": {"b": {"type": "integer"}}}]}, "dict[str, Any]"),
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
    from orsgen.generate.models import ModelRequest, build_models

    schema = {"type": "object", "properties": {"o": {"type": "object", "properties": {
        "r": {"$ref": "http://127.0.0.1:9/remote.json"}}}}}
    text, _ = hint(schema["properties"]["o"]["properties"]["r"])
    assert text == "Any"
    built = build_models([ModelRequest("t", "t", schema, dict(schema["properties"]), [], {"o": "o"})])
    assert "t" in built.models


def test_deep_nesting_terminates() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(40):
        schema = {"type": "array", "items": schema}
    text, warnings = hint(schema)
    assert text.startswith("list[") and "Any" in text
    assert any("deeply" in w for w in warnings)

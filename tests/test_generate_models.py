"""Identical nested shapes become one model class, however many tools share them."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from orsgen.generate import generate
from orsgen.snapshot.model import build

INNER = {
    "properties": {"label": {"type": "string"}, "weight": {"type": "number"}},
    "required": ["label"],
    "type": "object",
}


def _tool(name: str, inner: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "description": "",
        "input_schema": {
            "$defs": {"Inner": inner},
            "properties": {"inner": {"$ref": "#/$defs/Inner"}, "n": {"type": "integer"}},
            "required": ["inner"],
            "type": "object",
        },
    }


def _snapshot(tools: list[dict[str, Any]]) -> dict[str, Any]:
    environment = {"identity": {"env_name": "dedup"}, "tools": tools, "task_tools": []}
    return build(environment, {"name": "dedup", "class_name": "DedupEnv"})


def _classes(files: dict[str, str]) -> list[str]:
    return [n.name for n in ast.parse(files["models.py"]).body if isinstance(n, ast.ClassDef)]


def test_tools_sharing_a_nested_shape_share_its_classes() -> None:
    result = generate(_snapshot([_tool(f"t{i}", INNER) for i in range(5)]))
    assert result.ok, result.diagnostics
    assert sorted(_classes(result.files)) == ["Inner", "InnerArgs"]
    assert result.files["adapter.py"].count("_check_arguments(_models.InnerArgs,") == 5


def test_different_shapes_keep_their_own_classes() -> None:
    other = {**INNER, "required": ["label", "weight"]}
    result = generate(_snapshot([_tool("a", INNER), _tool("b", other), _tool("c", INNER)]))
    assert result.ok, result.diagnostics
    assert sorted(_classes(result.files)) == ["BArgs", "BInner", "Inner", "InnerArgs"]
    adapter = result.files["adapter.py"]
    assert "_check_arguments(_models.BArgs," in adapter
    assert adapter.count("_check_arguments(_models.InnerArgs,") == 2


TREE = {
    "properties": {"label": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/Inner"}}},
    "required": ["label"],
    "type": "object",
}


def test_a_recursive_shape_shared_by_tools_is_one_class() -> None:
    result = generate(_snapshot([_tool(f"t{i}", TREE) for i in range(3)]))
    assert result.ok, result.diagnostics
    assert sorted(_classes(result.files)) == ["Inner", "InnerArgs"]
    namespace: dict[str, Any] = {}
    exec(result.files["models.py"], namespace)  # noqa: S102 - source generated just above
    model = namespace["InnerArgs"]
    model.model_rebuild(_types_namespace=namespace)
    model.model_validate({"inner": {"label": "a", "kids": [{"label": "b", "kids": []}]}})
    with pytest.raises(Exception, match="validation error"):
        model.model_validate({"inner": {"label": "a", "kids": [{"kids": []}]}})

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
    "properties": {
        "label": {"type": "string"},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/Inner"}},
    },
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


def _failing_attempt(monkeypatch: pytest.MonkeyPatch, fails: Any) -> None:
    """Make model generation fail for the request lists ``fails`` picks."""
    from orsgen.generate import models

    real = models._attempt

    def attempt(requests: list[Any]) -> tuple[str, dict[str, str]]:
        if fails(requests):
            raise RuntimeError("boom")
        return real(requests)

    monkeypatch.setattr(models, "_attempt", attempt)


def _warnings(result: Any) -> dict[str | None, str]:
    return {d.tool: d.message for d in result.diagnostics if d.level == "warning"}


def test_a_tool_whose_model_fails_alone_is_left_out_with_a_warning(monkeypatch) -> None:
    _failing_attempt(monkeypatch, lambda reqs: any(r.wire == "bad" for r in reqs))
    result = generate(_snapshot([_tool("good", INNER), _tool("bad", INNER)]))
    assert result.ok
    assert _warnings(result) == {
        "bad": "nested arguments are described but not validated client-side: "
        "no model could be generated (boom)"
    }
    adapter = result.files["adapter.py"]
    assert "_check_arguments" in adapter.split("def good(")[1].split("def ")[0]
    assert "_check_arguments" not in adapter.split("def bad(")[1].split("def ")[0]


def test_models_that_only_fail_together_leave_every_tool_unvalidated(monkeypatch) -> None:
    _failing_attempt(monkeypatch, lambda reqs: len(reqs) > 1)
    result = generate(_snapshot([_tool("good", INNER), _tool("bad", INNER)]))
    assert result.ok
    why = "nested arguments are described but not validated client-side: "
    assert _warnings(result) == {
        "bad": why + "models could not be combined (RuntimeError)",
        "good": why + "models could not be combined (RuntimeError)",
    }
    assert "models.py" not in result.files
    assert "_check_arguments" not in result.files["adapter.py"]


GOOD_MODELS = '''"""doc"""
from __future__ import annotations

from pydantic import BaseModel, Field


class Inner(BaseModel):
    """An inner shape."""

    label: str = Field(..., description="x")
    weight: float | None = None
    KIND = "inner"


class Empty(BaseModel):
    pass


Inner.model_rebuild()
'''


def test_the_models_whitelist_accepts_plain_model_classes() -> None:
    from orsgen.generate.model_source import check_models_source

    assert check_models_source(GOOD_MODELS) == ["Inner", "Empty"]


@pytest.mark.parametrize(
    "change, message",
    [
        (("class Empty(BaseModel):", "@dataclass\nclass Empty(BaseModel):"), "decorators"),
        (("    pass", "    def run(self) -> None: ..."), "class Empty: unexpected FunctionDef"),
        (("from pydantic import", "from os import"), "unexpected import from 'os'"),
        (("Inner.model_rebuild()", "print(1)"), "unexpected top-level Expr"),
    ],
    ids=["decorator", "method", "import", "top-level call"],
)
def test_the_models_whitelist_rejects_anything_else(change: tuple[str, str], message: str) -> None:
    from orsgen.generate.model_source import check_models_source

    with pytest.raises(ValueError, match=message):
        check_models_source(GOOD_MODELS.replace(*change))


def _models_module(files: dict[str, str]) -> dict[str, Any]:
    """Run the generated models.py (declarations only) and return its namespace."""
    import sys
    import types

    module = types.ModuleType("_strict_models_test")
    sys.modules[module.__name__] = module
    try:
        exec(compile(files["models.py"], "models.py", "exec"), module.__dict__)  # noqa: S102
        for value in list(module.__dict__.values()):
            if isinstance(value, type) and value.__module__ == module.__name__:
                value.model_rebuild()
    finally:
        del sys.modules[module.__name__]
    return module.__dict__


STRICT = {
    "properties": {
        "low": {"type": "integer", "default": 0},
        "tags": {"type": "array", "items": {"type": "string"}, "default": ["a", "b"]},
        "kinds": {"type": "array", "items": {"type": "string"}},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "bad": {"type": "integer", "default": "not an int"},
    },
    "type": "object",
}


def test_models_are_as_strict_as_the_schema() -> None:
    result = generate(_snapshot([_tool("a", STRICT)]))
    assert result.ok, result.diagnostics
    source = result.files["models.py"]
    assert "low: int = 0" in source
    assert 'tags: list[str] = Field(default_factory=lambda: ["a", "b"])' in source
    assert "note: str | None = None" in source
    namespace = _models_module(result.files)
    inner = namespace["AInner"]  # one tool alone: its classes are named after it
    made = inner.model_validate({})
    assert (made.low, made.tags, made.note) == (0, ["a", "b"], None)
    assert inner.model_validate({}).tags is not made.tags  # a fresh list each time
    inner.model_validate({"note": None})  # the schema allows null here
    for field in ("low", "tags", "kinds", "bad"):  # and nowhere else
        with pytest.raises(ValueError):
            inner.model_validate({field: None})

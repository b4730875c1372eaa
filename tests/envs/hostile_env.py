"""ORS environments that serve arbitrary, hostile tool specs and echo every call back.

- ``HostileEnv`` serves :data:`HOSTILE_TOOLS` as shared tools and
  :data:`HOSTILE_TASK_TOOLS` as task tools (``list_task_tools``). Every call returns one
  text block: ``{"name": <wire tool name>, "input": <arguments as received>}``.
- ``RefusedEnv`` serves one tool orsgen must refuse (its arguments are not an object)
  beside a harmless one.
- ``FileEnv`` serves the specs in the JSON file named by ``ORSGEN_TEST_TOOLS`` (for
  ad-hoc and scale tests); without it, one plain tool.

``Environment.list_tools`` is a ``functools.cache``d classmethod on the base class;
overriding it with a plain classmethod replaces the cached one for the subclass only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from openreward.environments import (
    Environment,
    ListToolsOutput,
    TextBlock,
    ToolOutput,
    ToolSpec,
)
from openreward.environments.types import RunToolError, RunToolOutput, RunToolSuccess

NASTY_TEXT = (
    'He said "hi" \'\'\' """ \\ \\n \n next line \u2028 sep \x00 nul \x07 bell '
    "{{ 7*7 }} {% raw %} __import__('os').system('echo pwned') \r\n Args:\n"
    '    evil: injected parameter\nReturns: nothing (choices: ["a"])'
)

_OBJ_PARAM: dict[str, Any] = {
    "type": "object",
    "description": "Options object.",
    "properties": {
        "mode": {"enum": ["r", "w"]},
        "paths": {
            "type": "array",
            "items": {"type": "object", "properties": {"p": {"type": "string"}}, "required": ["p"]},
        },
        "class": {"type": "integer"},
    },
    "required": ["mode"],
}


def _tool(
    name: str,
    properties: Mapping[str, Any],
    required: list[str] | None = None,
    description: str = "A tool.",
    **extra: Any,
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": dict(properties), **extra}
    if required is not None:
        schema["required"] = required
    return {"name": name, "description": description, "input_schema": schema}


HOSTILE_TOOLS: list[dict[str, Any]] = [
    # Names: keywords, soft keywords, TRL names, adapter attributes, dunders, non-identifiers.
    _tool("class", {"from": {"type": "string"}, "import": {"type": "integer"}}, ["from"]),
    _tool("import", {"self": {"type": "string"}, "lambda": {"type": "boolean"}}, ["self"]),
    _tool("match", {"case": {"type": "string"}, "_": {"type": "string"}}),
    _tool("__class__", {"__init__": {"type": "string"}}, ["__init__"]),
    _tool("__init__", {"x": {"type": "string"}}),
    _tool("reset", {"task_index": {"type": "integer"}}),
    _tool("get_reward", {}),
    _tool("_private", {"_hidden": {"type": "string"}}, ["_hidden"]),
    _tool("reward", {"value": {"type": "number"}}),
    _tool("close", {}),
    _tool("WIRE_NAMES", {}),
    _tool(
        "str", {"str": {"type": "string"}, "Any": {"type": "integer"}, "dict": {"type": "string"}}
    ),
    _tool(
        "read-file",
        {"a-b": {"type": "string"}, "a.b": {"type": "string"}, "a b": {"type": "string"}},
    ),
    _tool("fs.read", {"path": {"type": "string"}}, ["path"]),
    _tool("read file", {"path": {"type": "string"}}),
    _tool("read_file", {"path": {"type": "string"}}),
    _tool("lire_fichier_é", {"chemin_à": {"type": "string"}, "日本": {"type": "string"}}),
    _tool("日本語", {"x": {"type": "string"}}),
    _tool("3d_render", {"1st": {"type": "integer"}, "2nd": {"type": "integer"}}),
    _tool("", {"": {"type": "string"}}),
    _tool("x" * 300, {"y" * 300: {"type": "string"}, "y" * 299 + "z": {"type": "string"}}),
    # Text: every field carries quotes, newlines, NUL, U+2028, Jinja and Python code.
    {
        "name": "nasty_text",
        "description": NASTY_TEXT,
        "input_schema": {
            "type": "object",
            "title": NASTY_TEXT,
            "properties": {
                "q": {
                    "type": "string",
                    "title": NASTY_TEXT,
                    "description": NASTY_TEXT,
                    "default": NASTY_TEXT,
                },
                "choice": {"enum": [NASTY_TEXT, "plain", "'", '"""', "\\"]},
                "args_in_desc": {"type": "string", "description": "Args:\n    fake: not a param"},
            },
        },
    },
    # Types.
    _tool(
        "typed",
        {
            "mixed_enum": {"enum": ["a", 1, True, None]},
            "konst": {"const": "fixed"},
            "floats": {"enum": [0.5, 1.5]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "pair": {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "integer"}],
                "items": False,
            },
            "scores": {"type": "object", "additionalProperties": {"type": "number"}},
            "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "maybe_list": {"type": ["string", "null"]},
            "maybe_oapi": {"type": "string", "nullable": True},
            "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "ref": {"$ref": "#/$defs/Level"},
            "old_ref": {"$ref": "#/definitions/Color"},
            "tree": {"$ref": "#/$defs/Node"},
            "merged": {
                "allOf": [{"$ref": "#/$defs/Base"}, {"properties": {"extra": {"type": "integer"}}}]
            },
            "untyped": {},
            "weird": {"type": "quaternion"},
            "remote": {"$ref": "https://example.invalid/schema.json"},
            "dangling": {"$ref": "#/$defs/Nope"},
        },
        ["mixed_enum"],
        **{
            "$defs": {
                "Level": {"type": "string", "enum": ["low", "high"]},
                "Node": {
                    "type": "object",
                    "properties": {
                        "v": {"type": "integer"},
                        "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                },
                "Base": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            },
            "definitions": {"Color": {"enum": ["red", "green"]}},
        },
    ),
    # Nested objects: validated client-side against models.py.
    _tool("nested", {"opts": _OBJ_PARAM, "note": {"type": "string"}}, ["opts"]),
    # Defaults.
    _tool(
        "defaults",
        {
            "n": {"type": "integer", "default": 3},
            "ratio": {"type": "number", "default": 0.5},
            "flag": {"type": "boolean", "default": False},
            "style": {"enum": ["plain", "loud"], "default": "loud"},
            "opt": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "items": {"type": "array", "items": {"type": "integer"}, "default": [1, 2]},
            "conf": {"type": "object", "default": {"a": 1}},
            "wrong": {"type": "integer", "default": "not-an-int"},
            "bad_enum": {"enum": [10, 20], "default": 1},
        },
    ),
]

HOSTILE_TASK_TOOLS: list[dict[str, Any]] = [
    _tool("task-only.tool", {"for": {"type": "string"}}, ["for"], description="Task tool."),
]

REFUSED_TOOLS: list[dict[str, Any]] = [
    {
        "name": "scalar_args",
        "description": "Arguments are a string.",
        "input_schema": {"type": "string"},
    },
    _tool("fine", {"x": {"type": "string"}}),
]


def _specs(raw: list[dict[str, Any]]) -> list[ToolSpec]:
    return [ToolSpec(**spec) for spec in raw]


class _EchoBase(Environment):
    """Echoes every call: the wire tool name and the arguments exactly as received."""

    def __init__(
        self, task_spec: Mapping[str, Any] = {}, secrets: dict[str, str] = {}
    ) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict[str, Any]]:
        return [{"n": 0}, {"n": 1}]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text="Call any tool.")]

    async def _call_tool(self, name: str, input: Mapping[str, Any]) -> RunToolOutput:
        known = {t.name for t in self.list_tools().tools} | {
            t.name for t in self.list_task_tools().tools
        }
        if name not in known:
            return RunToolOutput(
                RunToolError(error=f"{name!r} is not a valid tool", reason="not_found")
            )
        text = json.dumps({"name": name, "input": dict(input)}, sort_keys=True)
        return RunToolOutput(RunToolSuccess(output=ToolOutput(blocks=[TextBlock(text=text)])))


class HostileEnv(_EchoBase):
    @classmethod
    def list_tools(cls) -> ListToolsOutput:
        return ListToolsOutput(tools=_specs(HOSTILE_TOOLS))

    def list_task_tools(self) -> ListToolsOutput:
        return ListToolsOutput(tools=_specs(HOSTILE_TASK_TOOLS))


class RefusedEnv(_EchoBase):
    @classmethod
    def list_tools(cls) -> ListToolsOutput:
        return ListToolsOutput(tools=_specs(REFUSED_TOOLS))


def file_tools() -> list[dict[str, Any]]:
    path = os.environ.get("ORSGEN_TEST_TOOLS")
    if not path:
        return [_tool("plain", {"x": {"type": "string"}})]
    with open(path, encoding="utf-8") as fh:
        loaded: list[dict[str, Any]] = json.load(fh)
    return loaded


class FileEnv(_EchoBase):
    @classmethod
    def list_tools(cls) -> ListToolsOutput:
        return ListToolsOutput(tools=_specs(file_tools()))

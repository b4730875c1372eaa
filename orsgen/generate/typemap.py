"""JSON Schema → the richest Python type hint ``transformers.utils.get_json_schema`` can express.

Schemas are untrusted. Nothing here is ever executed or fetched: a remote or
dangling ``$ref`` or an unknown type becomes ``Any`` with a warning, and every
literal value reaches source only through ``repr``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orsgen.diagnostics import Diagnostic, warning
from orsgen.jsonobject import is_array, is_object

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
# mypy accepts these in Literal[...]; floats are not allowed there.
_LITERAL_TYPES = (str, int, bool, type(None))
# mypy rejects a Literal int outside a signed 64-bit range ("arbitrary expressions"),
# and parses ``-2**63`` as ``-(2**63)``, so the bound is symmetric.
_LITERAL_INT_LIMIT = 2**63 - 1
MAX_DEPTH = 12


@dataclass
class TypeContext:
    """Where we are: the whole input schema (for ``$ref``), the tool and a JSON pointer."""

    root: Mapping[str, Any]
    tool: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    uses: set[str] = field(default_factory=set)

    def warn(self, pointer: str, message: str) -> None:
        self.diagnostics.append(warning(self.tool, pointer, message))


def _escape_pointer(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def child(pointer: str, *parts: str) -> str:
    return pointer + "".join("/" + _escape_pointer(p) for p in parts)


def resolve_ref(ctx: TypeContext, ref: Any, pointer: str) -> Mapping[str, Any] | None:
    """A local ``#/$defs/X`` or ``#/definitions/X`` target, or ``None`` with a warning."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        ctx.warn(
            pointer, f"$ref {ref!r} is not local; orsgen never fetches schemas, so it is typed Any"
        )
        return None
    node: Any = ctx.root
    for raw in ref[1:].split("/")[1:]:
        key = raw.replace("~1", "/").replace("~0", "~")
        if not is_object(node) or key not in node:
            ctx.warn(pointer, f"$ref {ref!r} points at nothing; typed Any")
            return None
        node = node[key]
    if not is_object(node):
        ctx.warn(pointer, f"$ref {ref!r} does not point at a schema; typed Any")
        return None
    return node


def merge_all_of(ctx: TypeContext, schema: Mapping[str, Any], pointer: str) -> dict[str, Any]:
    """Fold ``allOf`` branches (after resolving their refs) into one schema."""
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for i, branch in enumerate(schema.get("allOf") or []):
        where = child(pointer, "allOf", str(i))
        if is_object(branch) and "$ref" in branch:
            branch = resolve_ref(ctx, branch["$ref"], where) or {}
        if not is_object(branch):
            continue
        if "allOf" in branch:
            branch = merge_all_of(ctx, branch, where)
        for key, value in branch.items():
            if key == "properties" and is_object(value):
                merged["properties"] = {**(merged.get("properties") or {}), **value}
            elif key == "required" and is_array(value):
                merged["required"] = list(dict.fromkeys([*(merged.get("required") or []), *value]))
            else:
                merged.setdefault(key, value)
    return merged


def deref(
    ctx: TypeContext, schema: Any, pointer: str, seen: frozenset[str]
) -> tuple[Any, frozenset[str]]:
    """Follow ``$ref`` chains and merge ``allOf``; returns the schema and the refs followed."""
    for _ in range(MAX_DEPTH):
        if not is_object(schema):
            return schema, seen
        if "$ref" in schema:
            ref = schema["$ref"]
            if isinstance(ref, str) and ref in seen:
                return {"type": "object", "x-orsgen-recursive": ref}, seen
            target = resolve_ref(ctx, ref, child(pointer, "$ref"))
            if target is None:
                return {}, seen
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **siblings}
            seen = seen | {str(ref)}
            continue
        if "allOf" in schema:
            schema = merge_all_of(ctx, schema, pointer)
            continue
        return schema, seen
    ctx.warn(pointer, "$ref chain too deep; typed Any")
    return {}, seen


def literal_can_hold(value: Any) -> bool:
    """Whether ``Literal[repr(value)]`` type-checks (a JSON enum/const value)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return -_LITERAL_INT_LIMIT <= value <= _LITERAL_INT_LIMIT
    return isinstance(value, _LITERAL_TYPES)


def _literal(values: list[Any]) -> str:
    return "Literal[" + ", ".join(repr(v) for v in values) + "]"


def _union(hints: list[str]) -> str:
    unique = list(dict.fromkeys(hints))
    if "Any" in unique:
        return "Any"
    return " | ".join(unique)


def hint_for(
    ctx: TypeContext, schema: Any, pointer: str, seen: frozenset[str] = frozenset(), depth: int = 0
) -> tuple[str, bool]:
    """Return ``(hint, nullable)``; the caller adds ``| None`` when it needs it."""
    if depth > MAX_DEPTH:
        ctx.warn(pointer, "schema nested too deeply; typed Any")
        return "Any", False
    if schema is True or schema is None or schema == {}:
        return "Any", False
    if schema is False:
        ctx.warn(pointer, "schema `false` accepts nothing; typed Any")
        return "Any", False
    if not is_object(schema):
        ctx.warn(pointer, f"schema is a {type(schema).__name__}, not an object; typed Any")
        return "Any", False
    schema, seen = deref(ctx, schema, pointer, seen)
    if not is_object(schema) or not schema:
        return "Any", False
    nullable = schema.get("nullable") is True

    if "const" in schema:
        return _enum_hint(ctx, [schema["const"]], pointer, nullable)
    if is_array(schema.get("enum")) and schema["enum"]:
        return _enum_hint(ctx, list(schema["enum"]), child(pointer, "enum"), nullable)

    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if is_array(branches) and branches:
            hints: list[str] = []
            for i, branch in enumerate(branches):
                if is_object(branch) and branch.get("type") == "null" and len(branch) <= 2:
                    nullable = True
                    continue
                hint, branch_null = hint_for(
                    ctx, branch, child(pointer, key, str(i)), seen, depth + 1
                )
                nullable = nullable or branch_null
                hints.append(hint)
            if not hints:
                return "Literal[None]", False  # a bare None cannot nest in a hint TRL reads
            return _union(hints), nullable

    kind = schema.get("type")
    if is_array(kind):
        kinds = [k for k in kind if k != "null"]
        nullable = nullable or len(kinds) < len(kind)
        if not kinds:
            return "Literal[None]", False  # a bare None cannot nest in a hint TRL reads
        hints = [hint_for(ctx, {**schema, "type": k}, pointer, seen, depth + 1)[0] for k in kinds]
        return _union(hints), nullable
    if kind is None:
        if "properties" in schema or "additionalProperties" in schema:
            kind = "object"
        elif "items" in schema or "prefixItems" in schema:
            kind = "array"
        else:
            return "Any", nullable
    if kind == "null":
        return "Literal[None]", False  # a bare None cannot nest in a hint TRL reads
    if kind in _SCALARS:
        return _SCALARS[kind], nullable
    if kind == "array":
        return _array_hint(ctx, schema, pointer, seen, depth), nullable
    if kind == "object":
        return _object_hint(ctx, schema, pointer, seen, depth), nullable
    ctx.warn(child(pointer, "type"), f"unknown type {kind!r}; typed Any")
    return "Any", nullable


def _enum_hint(
    ctx: TypeContext, values: list[Any], pointer: str, nullable: bool
) -> tuple[str, bool]:
    if None in values:
        nullable = True
        values = [v for v in values if v is not None]
    if not values:
        return "Literal[None]", False  # a bare None cannot nest in a hint TRL reads
    if all(literal_can_hold(v) for v in values):
        ctx.uses.add("Literal")
        # Dedupe by type and value: ``1``, ``1.0`` and ``True`` are equal but distinct enum values.
        unique = list({(type(v).__name__, v): v for v in values}.values())
        return _literal(unique), nullable
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        # An int too large for Literal; the allowed values reach the model in the description.
        return "int", nullable
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        # Literal cannot hold floats; the allowed values still reach the model in the description.
        return "float", nullable
    ctx.warn(
        pointer,
        "enum holds values a type hint cannot express; typed Any (values listed in the description)",
    )
    return "Any", nullable


def _array_hint(
    ctx: TypeContext, schema: Mapping[str, Any], pointer: str, seen: frozenset[str], depth: int
) -> str:
    prefix = schema.get("prefixItems")
    if is_array(prefix) and len(prefix) >= 2 and schema.get("items") is False:
        parts: list[str] = []
        for i, item in enumerate(prefix):
            hint, null = hint_for(ctx, item, child(pointer, "prefixItems", str(i)), seen, depth + 1)
            parts.append(_nullable(hint, null))
        return "tuple[" + ", ".join(parts) + "]"
    items = schema.get("items")
    if is_array(items):  # draft-04 tuple form: ``items`` is a list of schemas
        prefix, items = items, schema.get("additionalItems", True)
        if len(prefix) >= 2 and items is False:
            return _array_hint(ctx, {"prefixItems": prefix, "items": False}, pointer, seen, depth)
    if is_array(prefix) and prefix and not is_object(items):
        ctx.warn(child(pointer, "prefixItems"), "open-ended prefixItems typed as a list")
        items = {"anyOf": prefix} if len(prefix) > 1 else prefix[0]
    if items is None or items is True:
        return "list[Any]"
    hint, null = hint_for(ctx, items, child(pointer, "items"), seen, depth + 1)
    return f"list[{_nullable(hint, null)}]"


def _object_hint(
    ctx: TypeContext, schema: Mapping[str, Any], pointer: str, seen: frozenset[str], depth: int
) -> str:
    extra = schema.get("additionalProperties")
    if is_object(extra) and extra and not schema.get("properties"):
        hint, null = hint_for(ctx, extra, child(pointer, "additionalProperties"), seen, depth + 1)
        return f"dict[str, {_nullable(hint, null)}]"
    return "dict[str, Any]"


def _nullable(hint: str, nullable: bool) -> str:
    if not nullable or hint in ("Any", "None") or hint.endswith("| None"):
        return hint
    return f"{hint} | None"


def with_null(hint: str, nullable: bool) -> str:
    return _nullable(hint, nullable)


def short_json(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."

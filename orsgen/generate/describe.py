"""Compact, human-readable descriptions of nested schema structure.

``get_json_schema`` can only show the model ``dict[str, Any]`` for an object, so the
fields of nested objects (and enum values a ``Literal`` cannot hold) are spelled out
in the parameter's description instead, e.g.
``{mode: 'r' | 'w' (required), paths: list of {p: str}}``.
"""

from __future__ import annotations

from typing import Any

from orsgen.generate.typemap import (
    MAX_DEPTH,
    TypeContext,
    child,
    deref,
    literal_can_hold,
    short_json,
)
from orsgen.jsonobject import is_array, is_object

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "null"}


def needs_structure(schema: Any, ctx: TypeContext, pointer: str) -> bool:
    """True when the type hint alone hides facts: object fields or non-Literal enums."""
    from orsgen.generate.models import has_object_fields

    return has_object_fields(schema, ctx.root) or _has_non_literal_enum(schema, ctx, pointer)


def _has_non_literal_enum(schema: Any, ctx: TypeContext, pointer: str) -> bool:
    quiet = TypeContext(ctx.root, ctx.tool)
    schema, _ = deref(quiet, schema, pointer, frozenset())
    if not is_object(schema):
        return False
    values = schema.get("enum")
    return is_array(values) and not all(literal_can_hold(v) for v in values)


def describe(
    schema: Any, ctx: TypeContext, pointer: str, seen: frozenset[str] = frozenset(), depth: int = 0
) -> str:
    # A throwaway context: warnings were already reported while mapping the type.
    quiet = TypeContext(ctx.root, ctx.tool)
    if depth > MAX_DEPTH:
        return "..."
    if not is_object(schema) or not schema:
        return "any"
    schema, seen = deref(quiet, schema, pointer, seen)
    if not is_object(schema) or not schema:
        return "any"
    if "x-orsgen-recursive" in schema:
        return f"(recursive {schema['x-orsgen-recursive']})"
    if "const" in schema:
        return short_json(schema["const"])
    if is_array(schema.get("enum")) and schema["enum"]:
        return " | ".join(short_json(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if is_array(branches) and branches:
            return " or ".join(
                describe(b, quiet, child(pointer, key, str(i)), seen, depth + 1)
                for i, b in enumerate(branches)
            )
    kind = schema.get("type")
    if is_array(kind):
        return " or ".join(
            describe({**schema, "type": k}, quiet, pointer, seen, depth + 1) for k in kind
        )
    if kind is None:
        if "properties" in schema:
            kind = "object"
        elif "items" in schema or "prefixItems" in schema:
            kind = "array"
        else:
            return "any"
    if kind == "array":
        prefix = schema.get("prefixItems")
        if is_array(prefix) and prefix:
            inner = ", ".join(
                describe(p, quiet, child(pointer, "prefixItems", str(i)), seen, depth + 1)
                for i, p in enumerate(prefix)
            )
            return f"[{inner}]"
        return "list of " + describe(
            schema.get("items"), quiet, child(pointer, "items"), seen, depth + 1
        )
    if kind == "object":
        props = schema.get("properties")
        if is_object(props) and props:
            required = set(schema.get("required") or [])
            fields: list[str] = []
            for name, prop in props.items():
                text = describe(
                    prop, quiet, child(pointer, "properties", str(name)), seen, depth + 1
                )
                fields.append(f"{name}: {text}" + (" (required)" if name in required else ""))
            return "{" + ", ".join(fields) + "}"
        extra = schema.get("additionalProperties")
        if is_object(extra) and extra:
            return "map of str to " + describe(
                extra, quiet, child(pointer, "additionalProperties"), seen, depth + 1
            )
        return "object"
    return _SCALARS.get(str(kind), str(kind))

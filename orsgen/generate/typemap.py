"""JSON Schema → the richest type ``get_json_schema`` can express, as an :mod:`~orsgen.generate.ir`
tree. Schemas are untrusted. Nothing here is ever executed or fetched: a remote or
dangling ``$ref`` or an unknown type becomes ``Any`` with a warning, and every
literal value reaches source only through ``repr``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from orsgen.jsonobject import is_array, is_object
from orsgen.generate import ir
from orsgen.generate.schema_refs import MAX_DEPTH, Resolved, TypeContext, child, deref

_SCALARS: dict[str, ir.Scalar] = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
}
# mypy accepts these in Literal[...]; floats are not allowed there.
_LITERAL_TYPES = (str, int, bool, type(None))
# mypy rejects a Literal int outside a signed 64-bit range ("arbitrary expressions"),
# and parses ``-2**63`` as ``-(2**63)``, so the bound is symmetric.
_LITERAL_INT_LIMIT = 2**63 - 1


def literal_can_hold(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return -_LITERAL_INT_LIMIT <= value <= _LITERAL_INT_LIMIT
    return isinstance(value, _LITERAL_TYPES)


def type_of(
    ctx: TypeContext, schema: Any, pointer: str, seen: frozenset[str] = frozenset(), depth: int = 0
) -> tuple[ir.Node, bool]:
    """``(node, nullable)``; the caller wraps it in ``Optional`` when it needs to."""
    if depth > MAX_DEPTH:
        ctx.warn(pointer, "schema nested too deeply; typed Any")
        return ir.AnyOf(ir.TOO_DEEP), False
    if schema is True or schema is None or schema == {}:
        return ir.ANY, False
    if schema is False:
        ctx.warn(pointer, "schema `false` accepts nothing; typed Any")
        return ir.AnyOf("schema false"), False
    if not is_object(schema):
        ctx.warn(pointer, f"schema is a {type(schema).__name__}, not an object; typed Any")
        return ir.AnyOf("not a schema"), False
    resolved = deref(ctx, schema, pointer, seen)
    if isinstance(resolved.schema, ir.Recursive):
        return resolved.schema, False
    if not is_object(resolved.schema) or not resolved.schema:
        return ir.ANY, False
    return _schema_type(ctx, resolved, pointer, depth)


def _implied_kind(schema: Mapping[str, Any]) -> str | None:
    if "properties" in schema or "additionalProperties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return None


def _schema_type(
    ctx: TypeContext, resolved: Resolved, pointer: str, depth: int
) -> tuple[ir.Node, bool]:
    schema: Mapping[str, Any] = resolved.schema
    seen = resolved.seen
    is_null = schema.get("nullable") is True
    if "const" in schema:
        return _enum_type(ctx, [schema["const"]], pointer, is_null)
    if is_array(schema.get("enum")) and schema["enum"]:
        return _enum_type(ctx, list(schema["enum"]), child(pointer, "enum"), is_null)
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if is_array(branches) and branches:
            where = child(pointer, key)
            return _union_type(ctx, list(branches), where, seen, depth, is_null)
    kind = schema.get("type")
    if is_array(kind):
        kinds = [k for k in kind if k != "null"]
        is_null = is_null or len(kinds) < len(kind)
        if not kinds:
            return ir.NONE, False
        nodes = [type_of(ctx, {**schema, "type": k}, pointer, seen, depth + 1)[0] for k in kinds]
        return ir.union(nodes), is_null
    if kind is None:
        kind = _implied_kind(schema)
        if kind is None:
            return ir.ANY, is_null
    if kind == "null":
        return ir.NONE, False
    if kind in _SCALARS:
        return ir.Primitive(_SCALARS[kind]), is_null
    if kind == "array":
        return _array_type(ctx, schema, pointer, seen, depth), is_null
    if kind == "object":
        return _object_type(ctx, resolved.ref, schema, pointer, seen, depth), is_null
    ctx.warn(child(pointer, "type"), f"unknown type {kind!r}; typed Any")
    return ir.AnyOf(f"unknown type {kind!r}"), is_null


def _union_type(
    ctx: TypeContext,
    branches: list[Any],
    pointer: str,
    seen: frozenset[str],
    depth: int,
    is_null: bool,
) -> tuple[ir.Node, bool]:
    """``anyOf``/``oneOf``: a null branch makes the union nullable rather than a member."""
    nodes: list[ir.Node] = []
    for i, branch in enumerate(branches):
        if is_object(branch) and branch.get("type") == "null" and len(branch) <= 2:
            is_null = True
            continue
        node, branch_null = type_of(ctx, branch, child(pointer, str(i)), seen, depth + 1)
        is_null = is_null or branch_null
        nodes.append(node)
    return (ir.union(nodes), is_null) if nodes else (ir.NONE, False)


def _enum_type(
    ctx: TypeContext, values: list[Any], pointer: str, is_null: bool
) -> tuple[ir.Node, bool]:
    if None in values:
        is_null = True
        values = [v for v in values if v is not None]
    if not values:
        return ir.NONE, False
    if all(literal_can_hold(v) for v in values):
        # Dedupe by type and value: ``1``, ``1.0`` and ``True`` are equal but distinct enum values.
        unique = list({(type(v).__name__, v): v for v in values}.values())
        return ir.LiteralOf(tuple(unique)), is_null
    # The allowed values reach the model in the description (``choices``).
    choices = tuple(values)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return ir.Primitive("int", choices), is_null  # an int too large for Literal
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return ir.Primitive("float", choices), is_null  # Literal cannot hold floats
    ctx.warn(
        pointer,
        "enum holds values a type hint cannot express; typed Any (values listed in the description)",
    )
    return ir.AnyOf("enum values a hint cannot express", choices), is_null


def _array_type(
    ctx: TypeContext, schema: Mapping[str, Any], pointer: str, seen: frozenset[str], depth: int
) -> ir.Node:
    prefix = schema.get("prefixItems")
    if is_array(prefix) and len(prefix) >= 2 and schema.get("items") is False:
        parts: list[ir.Node] = []
        for i, item in enumerate(prefix):
            node, null = type_of(ctx, item, child(pointer, "prefixItems", str(i)), seen, depth + 1)
            parts.append(ir.nullable(node, null))
        return ir.TupleOf(tuple(parts))
    items = schema.get("items")
    if is_array(items):  # draft-04 tuple form: ``items`` is a list of schemas
        prefix, items = items, schema.get("additionalItems", True)
        if len(prefix) >= 2 and items is False:
            return _array_type(ctx, {"prefixItems": prefix, "items": False}, pointer, seen, depth)
    if is_array(prefix) and prefix and not is_object(items):
        ctx.warn(child(pointer, "prefixItems"), "open-ended prefixItems typed as a list")
        items = {"anyOf": prefix} if len(prefix) > 1 else prefix[0]
    if items is None or items is True:
        return ir.ListOf(ir.ANY)
    node, null = type_of(ctx, items, child(pointer, "items"), seen, depth + 1)
    return ir.ListOf(ir.nullable(node, null))


def _object_type(
    ctx: TypeContext,
    ref: str,
    schema: Mapping[str, Any],
    pointer: str,
    seen: frozenset[str],
    depth: int,
) -> ir.Node:
    extra: Any = schema.get("additionalProperties")
    props = schema.get("properties")
    has_fields = is_object(props) and bool(props)
    # No hint shows an object's fields (nor its extras), so those are typed quietly.
    typer = TypeContext(ctx.root, ctx.tool) if has_fields else ctx
    extra_node: ir.Node | bool | None = extra if isinstance(extra, bool) else None
    if is_object(extra) and extra:
        where = child(pointer, "additionalProperties")
        node, null = type_of(typer, extra, where, seen, depth + 1)
        extra_node = ir.nullable(node, null)
    if not has_fields:
        return ir.DictOf(
            ir.ANY if extra_node is None or isinstance(extra_node, bool) else extra_node
        )
    return ir.ObjectOf(object_fields(typer, schema, pointer, seen, depth + 1), ref, extra_node)


def object_fields(
    ctx: TypeContext,
    schema: Mapping[str, Any],
    pointer: str,
    seen: frozenset[str] = frozenset(),
    depth: int = 0,
) -> tuple[ir.Field, ...]:
    props: Any = schema.get("properties")
    required: Any = schema.get("required")
    names = {str(r) for r in required} if is_array(required) else set[str]()
    if not is_object(props):
        return ()
    return tuple(
        field_of(ctx, str(n), p, child(pointer, "properties", str(n)), n in names, seen, depth)
        for n, p in props.items()
    )


def field_of(
    ctx: TypeContext,
    name: str,
    schema: Any,
    pointer: str,
    required: bool,
    seen: frozenset[str] = frozenset(),
    depth: int = 0,
) -> ir.Field:
    node, null = type_of(ctx, schema, pointer, seen, depth)
    if not is_object(schema):
        return ir.Field(name, node, null, required)
    # A ref's target documents the property when the property itself does not.
    target = deref(TypeContext(ctx.root, ctx.tool), schema, pointer, frozenset()).schema
    source: Mapping[str, Any] = target if is_object(target) else schema
    return ir.Field(
        name,
        node,
        null,
        required,
        description=str(schema.get("description") or source.get("description") or ""),
        title=str(schema.get("title") or source.get("title") or ""),
        has_default="default" in schema,
        default=schema.get("default"),
    )


def tool_tree(input_schema: Any, tool: str, ctx: TypeContext | None = None) -> ir.ObjectOf:
    """A tool's arguments, the one tree views and versioning read (warnings go to ``ctx``)."""
    if ctx is None:
        ctx = TypeContext(root=input_schema if is_object(input_schema) else {}, tool=tool)
    arguments = deref(ctx, ctx.root, "", frozenset()).schema
    if not is_object(arguments):
        return ir.ObjectOf(())
    return ir.ObjectOf(object_fields(ctx, arguments, ""))


def short_json(value: Any, limit: int = 200, ensure_ascii: bool = False) -> str:
    text = json.dumps(value, ensure_ascii=ensure_ascii, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."

"""Nested fields (and enums no ``Literal`` holds) spelled out in a parameter's description,
since ``get_json_schema`` shows an object only as ``dict[str, Any]``."""

from __future__ import annotations

from orsgen.generate import ir
from orsgen.generate.typemap import short_json


def describe(node: ir.Node) -> str:
    if isinstance(node, ir.Optional):
        return f"{describe(node.inner)} or null"
    if isinstance(node, ir.UnionOf):
        return " or ".join(describe(m) for m in node.members)
    if isinstance(node, ir.LiteralOf):
        return " | ".join(short_json(v) for v in node.values)
    if isinstance(node, (ir.Primitive, ir.AnyOf)) and node.choices:
        return " | ".join(short_json(v) for v in node.choices)
    if isinstance(node, ir.Primitive):
        return node.name
    if isinstance(node, ir.ListOf):
        return f"list of {describe(node.item)}"
    if isinstance(node, ir.TupleOf):
        return "[" + ", ".join(describe(i) for i in node.items) + "]"
    if isinstance(node, ir.DictOf):
        return "object" if node.value == ir.ANY else f"map of str to {describe(node.value)}"
    if isinstance(node, ir.ObjectOf):
        return "{" + ", ".join(_field(f) for f in node.fields) + "}"
    if isinstance(node, ir.Recursive):
        return f"(recursive {node.ref})"
    if node.absorbed:
        return " or ".join([*(describe(m) for m in node.absorbed), "any"])
    return "..." if node.reason == ir.TOO_DEEP else "any"


def _field(field: ir.Field) -> str:
    return f"{field.name}: {describe(field.type)}" + (" (required)" if field.required else "")

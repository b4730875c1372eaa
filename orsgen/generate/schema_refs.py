"""JSON pointers, the one local ``$ref`` resolver, and ``allOf`` merging. Nothing is fetched:
a remote or dangling ``$ref`` resolves to nothing, with a warning naming tool and pointer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orsgen.diagnostics import Diagnostic, warning
from orsgen.generate.ir import Recursive
from orsgen.jsonobject import is_array, is_object

MAX_DEPTH = 12  # the longest ``$ref`` chain followed, and the deepest nesting typed


@dataclass
class TypeContext:
    """The whole input schema (for ``$ref``), the tool, and the warnings."""

    root: Mapping[str, Any]
    tool: str
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def warn(self, pointer: str, message: str) -> None:
        self.diagnostics.append(warning(self.tool, pointer, message))


def child(pointer: str, *parts: str) -> str:
    return pointer + "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


_MISSING = object()


def _target(root: Mapping[str, Any], ref: str) -> Any:
    node: Any = root
    for raw in ref[1:].split("/")[1:]:
        key = raw.replace("~1", "/").replace("~0", "~")
        if not is_object(node) or key not in node:
            return _MISSING
        node = node[key]
    return node


def resolve_ref(ctx: TypeContext, ref: Any, pointer: str) -> Mapping[str, Any] | None:
    """The schema a local ``$ref`` names, or ``None`` with a warning saying why."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        ctx.warn(
            pointer, f"$ref {ref!r} is not local; orsgen never fetches schemas, so it is typed Any"
        )
        return None
    target = _target(ctx.root, ref)
    if is_object(target):
        return target
    what = "points at nothing" if target is _MISSING else "does not point at a schema"
    ctx.warn(pointer, f"$ref {ref!r} {what}; typed Any")
    return None


def merge_all_of(ctx: TypeContext, schema: Mapping[str, Any], pointer: str) -> dict[str, Any]:
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


@dataclass(frozen=True)
class Resolved:
    """A schema after its ``$ref`` chain (a ``Recursive`` node on a cycle) and ``allOf``."""

    schema: Any
    seen: frozenset[str]
    ref: str = ""


def deref(ctx: TypeContext, schema: Any, pointer: str, seen: frozenset[str]) -> Resolved:
    ref = ""
    for _ in range(MAX_DEPTH):
        if not is_object(schema):
            return Resolved(schema, seen, ref)
        if "$ref" in schema:
            target_ref = schema["$ref"]
            if isinstance(target_ref, str) and target_ref in seen:
                return Resolved(Recursive(target_ref), seen, ref)
            target = resolve_ref(ctx, target_ref, child(pointer, "$ref"))
            if target is None:
                return Resolved({}, seen)
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **siblings}
            ref = str(target_ref)
            seen = seen | {ref}
            continue
        if "allOf" in schema:
            schema = merge_all_of(ctx, schema, pointer)
            continue
        return Resolved(schema, seen, ref)
    ctx.warn(pointer, "$ref chain too deep; typed Any")
    return Resolved({}, seen)

"""The one JSON Schema handed to datamodel-code-generator, written from the type nodes.

It holds structure only (types, properties, required, items, enums): no description,
title, default, pattern or format can reach source or run at import time. Each tool gets one
``<Pascal>Args`` class; identical shapes share classes (:class:`_Names`). Nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from orsgen.generate import ir, model_defaults, naming

ROOT_CLASS = "OrsgenModelsRoot"  # the placeholder root class, stripped from the output
_JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


@dataclass
class ModelRequest:
    """One tool's nested parameters (those for which ``ir.has_model``): its model's input."""

    method: str
    wire: str
    params: tuple[ir.Field, ...]
    python_names: dict[str, str]  # wire name -> Python parameter name


def _referenced(node: ir.Node) -> Iterator[ir.ObjectOf]:
    """Every object reached through a ``$ref`` in ``node`` (fields too), parents first."""
    for inner in ir.walk(node):
        if isinstance(inner, ir.ObjectOf):
            if inner.ref:
                yield inner
            for f in inner.fields:
                yield from _referenced(f.type)
            if inner.extra is not None and not isinstance(inner.extra, bool):
                yield from _referenced(inner.extra)


def _args_shape(params: tuple[ir.Field, ...]) -> ir.Shape:
    return ("args", tuple(ir.field_key(f) for f in params))


class _Names:
    """One class per distinct shape of node, named after its first tool (``<Tool><Ref>``)."""

    def __init__(self) -> None:
        self.taken = {ROOT_CLASS}
        self.by_shape: dict[ir.Shape, str] = {}
        self.plain: dict[str, str] = {}  # class -> the name it takes when shared
        self.users: dict[str, set[tuple[str, str]]] = {}  # class -> {(method, ref)}

    def claim(self, shape: ir.Shape, wanted: str, plain: str, user: tuple[str, str]) -> None:
        if shape not in self.by_shape:
            name, n = wanted, 2
            while name in self.taken:
                name, n = f"{wanted}{n}", n + 1
            self.taken.add(name)
            self.by_shape[shape], self.plain[name], self.users[name] = name, plain, set()
        self.users[self.by_shape[shape]].add(user)

    def final(self) -> dict[ir.Shape, str]:
        """Shape -> class name. A shared nested class is named as in the schema, a shared
        ``Args`` class after the parameters it holds, since no single tool owns it."""
        rename: dict[str, str] = {}
        for name in sorted(n for n, users in self.users.items() if len(users) > 1):
            plain = self.plain[name]
            if plain not in self.taken and len(plain) <= 60:
                rename[name] = plain
                self.taken.add(plain)
        return {shape: rename.get(name, name) for shape, name in self.by_shape.items()}


def _class_prefix(method: str, taken: set[str]) -> str:
    base = naming.pascal_case(method)
    name, n = base, 2
    while f"{name}Args" in taken:
        name, n = f"{base}{n}", n + 1
    return name


def _tail(ref: str) -> str:
    return naming.pascal_case(ref.rsplit("/", 1)[-1] if ref not in ("#", "#/") else "Root")


def _class_names(requests: list[ModelRequest]) -> dict[ir.Shape, str]:
    names = _Names()
    for req in requests:
        prefix = _class_prefix(req.method, names.taken)
        plain = naming.pascal_case("_".join(sorted(f.name for f in req.params))) + "Args"
        names.claim(_args_shape(req.params), f"{prefix}Args", plain, (req.method, ""))
        for f in req.params:
            for obj in _referenced(f.type):
                names.claim(
                    ir.shape_key(obj),
                    prefix + _tail(obj.ref),
                    _tail(obj.ref),
                    (req.method, obj.ref),
                )
    return names.final()


class _Emitter:
    """Nodes as structural JSON Schema, one ``$defs`` entry per class (a ``$ref``, an ``Args``)."""

    def __init__(self, classes: dict[ir.Shape, str]) -> None:
        self.classes = classes  # shape -> class name
        self.defs: dict[str, Any] = {}
        self.refs: dict[str, str] = {}  # the current tool's local refs -> class name

    def define(self, name: str, fields: tuple[ir.Field, ...], extra: Any) -> dict[str, str]:
        if name not in self.defs:
            self.defs[name] = {}  # placed before its fields, which may recurse to it
            self.defs[name] = self.object(fields, extra)
        return {"$ref": f"#/$defs/{name}"}

    def object(self, fields: tuple[ir.Field, ...], extra: ir.Node | bool | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "object",
            "properties": {f.name: self.field(f) for f in fields},
            "required": [f.name for f in fields if f.required],
        }
        if extra is not None:
            out["additionalProperties"] = extra if isinstance(extra, bool) else self.emit(extra)
        return out

    def field(self, f: ir.Field) -> Any:
        schema = self.emit(f.type)
        has_default, value = model_defaults.schema_default(f)
        return {**schema, "default": value} if has_default else schema

    def emit(self, node: ir.Node) -> Any:
        if node == ir.NONE:
            return {"type": "null"}
        if isinstance(node, ir.Primitive):
            choices = {"enum": list(node.choices)} if node.choices else {}
            return {"type": _JSON_TYPES[node.name], **choices}
        if isinstance(node, ir.LiteralOf):
            return {"enum": list(node.values)}
        if isinstance(node, ir.ListOf):
            return {"type": "array", "items": self.emit(node.item)}
        if isinstance(node, ir.TupleOf):
            items = [self.emit(i) for i in node.items]
            return {"type": "array", "prefixItems": items, "items": False}
        if isinstance(node, ir.DictOf):
            return {"type": "object", "additionalProperties": self.emit(node.value)}
        if isinstance(node, ir.UnionOf):
            return {"anyOf": [self.emit(m) for m in node.members]}
        if isinstance(node, ir.Optional):
            return {"anyOf": [self.emit(node.inner), {"type": "null"}]}
        if isinstance(node, ir.Recursive):
            name = self.refs.get(node.ref)
            return {"$ref": f"#/$defs/{name}"} if name else {}
        if isinstance(node, ir.ObjectOf):
            if not node.ref:
                return self.object(node.fields, node.extra)
            self.refs[node.ref] = self.classes[ir.shape_key(node)]
            return self.define(self.refs[node.ref], node.fields, node.extra)
        return {"enum": list(node.choices)} if node.choices else {}


def combined_schema(requests: list[ModelRequest]) -> tuple[dict[str, Any], dict[str, str]]:
    """The one schema handed to datamodel-code-generator, and each tool's ``Args`` class."""
    classes = _class_names(requests)
    emitter = _Emitter(classes)
    args: dict[str, str] = {}
    for req in requests:
        emitter.refs = {}
        args[req.method] = classes[_args_shape(req.params)]
        emitter.define(args[req.method], req.params, None)
    return {"type": "object", "properties": {}, "$defs": emitter.defs}, args

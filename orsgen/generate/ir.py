"""The typed tree a tool's JSON Schema is normalised into, once (by ``typemap``): every
output derives from it; nothing walks the raw schema twice or parses a rendered hint back."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

Scalar: TypeAlias = Literal["str", "int", "float", "bool"]


@dataclass(frozen=True)
class Primitive:
    """``str``/``int``/``float``/``bool``. ``choices``: enum values a ``Literal`` cannot
    hold (floats, huge ints), which the description lists instead."""

    name: Scalar
    choices: tuple[Any, ...] = ()


@dataclass(frozen=True)
class LiteralOf:
    """``Literal[...]`` of str/int/bool/None values (mypy allows no floats there)."""

    values: tuple[Any, ...]


@dataclass(frozen=True)
class ListOf:
    item: Node


@dataclass(frozen=True)
class TupleOf:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class DictOf:
    """A map with no declared fields: ``dict[str, value]``."""

    value: Node


@dataclass(frozen=True)
class Field:
    """A declared property (a tool's parameter, or a field of a nested object). Only
    ``name``, ``node``, ``nullable`` and ``required`` make its shape; the rest documents it."""

    name: str
    node: Node  # without the ``| None`` that ``nullable`` adds
    nullable: bool
    required: bool
    description: str = field(default="", compare=False)  # or else the title
    title: str = field(default="", compare=False)
    has_default: bool = field(default=False, compare=False)
    default: Any = field(default=None, compare=False)

    @property
    def type(self) -> Node:
        return nullable(self.node, self.nullable)


@dataclass(frozen=True)
class ObjectOf:
    """An object that declares fields: hinted ``dict[str, Any]``, validated by a model named
    after ``ref`` (its local ``$ref``, "" inline); ``extra``: ``additionalProperties``."""

    fields: tuple[Field, ...]
    ref: str = field(default="", compare=False)  # a name, not part of the shape
    extra: Node | bool | None = None


@dataclass(frozen=True)
class Recursive:
    """A ``$ref`` back to an enclosing schema: ``dict[str, Any]``, never expanded again."""

    ref: str


@dataclass(frozen=True)
class UnionOf:
    members: tuple[Node, ...]


@dataclass(frozen=True)
class Optional:
    inner: Node


@dataclass(frozen=True)
class AnyOf:
    """``Any``; ``reason`` says why nothing narrower was possible ("" for an open schema).
    ``choices``: enum values no hint can express; ``absorbed``: the structured members of
    a union that an open branch made ``Any``. The description lists both."""

    reason: str = ""
    choices: tuple[Any, ...] = ()
    absorbed: tuple[Node, ...] = ()


Node: TypeAlias = (
    Primitive
    | LiteralOf
    | ListOf
    | TupleOf
    | DictOf
    | ObjectOf
    | Recursive
    | UnionOf
    | Optional
    | AnyOf
)
ANY = AnyOf()
NONE = LiteralOf((None,))  # a bare ``None`` cannot nest in a hint TRL reads
TOO_DEEP = "nested too deeply"


def render(node: Node) -> str:
    if isinstance(node, Primitive):
        return node.name
    if isinstance(node, LiteralOf):
        return "Literal[" + ", ".join(repr(v) for v in node.values) + "]"
    if isinstance(node, ListOf):
        return f"list[{render(node.item)}]"
    if isinstance(node, TupleOf):
        return "tuple[" + ", ".join(render(i) for i in node.items) + "]"
    if isinstance(node, DictOf):
        return f"dict[str, {render(node.value)}]"
    if isinstance(node, (ObjectOf, Recursive)):
        return "dict[str, Any]"  # the fields are validated by a model, not by the hint
    if isinstance(node, UnionOf):
        # Objects of different shapes are distinct members but render alike.
        return " | ".join(dict.fromkeys(render(m) for m in node.members))
    if isinstance(node, Optional):
        return f"{render(node.inner)} | None"
    return "Any"


Shape: TypeAlias = tuple[Any, ...]


def _value_key(value: Any) -> tuple[str, str]:
    # By type too: ``1``, ``1.0`` and ``True`` are equal but distinct schema values.
    return type(value).__name__, repr(value)


def shape_key(node: Node | bool | None) -> Shape:
    """What makes two nodes the same shape, explicitly: every fact a model validates
    (types, field names, nullability, requiredness, enum values, extras), and none that
    only documents (descriptions, titles, defaults) or names a class (an object's ``ref``)."""
    if node is None or isinstance(node, bool):
        return ("flag", node)
    if isinstance(node, Primitive):
        return ("primitive", node.name, tuple(_value_key(v) for v in node.choices))
    if isinstance(node, LiteralOf):
        return ("literal", tuple(_value_key(v) for v in node.values))
    if isinstance(node, ObjectOf):
        fields = tuple(field_key(f) for f in node.fields)
        return ("object", fields, shape_key(node.extra))
    if isinstance(node, Recursive):
        return ("recursive", node.ref)
    if isinstance(node, AnyOf):
        choices = tuple(_value_key(v) for v in node.choices)
        return ("any", node.reason, choices, tuple(shape_key(m) for m in node.absorbed))
    return (type(node).__name__, tuple(shape_key(n) for n in children(node)))


def field_key(f: Field) -> Shape:
    # The default is part of a model's shape: the model holds it.
    default = _value_key(f.default) if f.has_default else None
    return (f.name, shape_key(f.node), f.nullable, f.required, default)


def _identity(node: Node) -> Shape | str:
    # The rendered hint, since ``Literal[1]`` and ``Literal[True]`` compare equal; objects
    # and enum choices by their shape.
    return shape_key(node) if has_structure(node) else render(node)


def union(members: list[Node]) -> Node:
    """``A | B``, duplicates dropped; any ``Any`` member makes the whole union ``Any``."""
    unique = list({_identity(m): m for m in members}.values())
    if any(isinstance(m, AnyOf) for m in unique):
        absorbed = tuple(m for m in unique if not isinstance(m, AnyOf) and has_structure(m))
        return AnyOf(absorbed=absorbed) if absorbed else ANY
    return unique[0] if len(unique) == 1 else UnionOf(tuple(unique))


def nullable(node: Node, is_nullable: bool) -> Node:
    if not is_nullable or isinstance(node, (AnyOf, Optional)):
        return node
    return Optional(node)


def children(node: Node) -> tuple[Node, ...]:
    """The nodes inside ``node``'s hint (an object's fields are not: no hint shows them)."""
    if isinstance(node, ListOf):
        return (node.item,)
    if isinstance(node, TupleOf):
        return node.items
    if isinstance(node, DictOf):
        return (node.value,)
    if isinstance(node, UnionOf):
        return node.members
    if isinstance(node, Optional):
        return (node.inner,)
    return ()


def walk(node: Node) -> Iterator[Node]:
    yield node
    for inner in children(node):
        yield from walk(inner)


def has_model(node: Node) -> bool:
    """Whether the hint hides declared object fields, which a model validates."""
    return any(isinstance(n, ObjectOf) for n in walk(node))


def has_structure(node: Node) -> bool:
    """Whether the hint alone hides facts (object fields, enum values a ``Literal``
    cannot hold), so the description must spell the structure out."""
    return any(
        isinstance(n, ObjectOf)
        or isinstance(n, (Primitive, AnyOf))
        and bool(n.choices)
        or isinstance(n, AnyOf)
        and bool(n.absorbed)
        for n in walk(node)
    )


def members(node: Node) -> list[Node]:
    if isinstance(node, Optional):
        return [*members(node.inner), NONE]
    if isinstance(node, UnionOf):
        return list(node.members)
    return [node]


_SCALAR_TYPES: dict[str, type | tuple[type, ...]] = {
    "str": str,
    "int": int,
    "float": (int, float),
    "bool": bool,
}


def fits(value: Any, node: Node) -> bool:
    """Whether a (JSON scalar) default value is of type ``node``, so it can be the
    Python default. Containers never are: their defaults are mutable."""
    if isinstance(node, AnyOf):
        return True
    if isinstance(node, LiteralOf):
        return any(type(v) is type(value) and v == value for v in node.values)
    if isinstance(node, Optional):
        return value is None or fits(value, node.inner)
    if isinstance(node, UnionOf):
        return any(fits(value, m) for m in node.members)
    if isinstance(node, Primitive):
        ok = isinstance(value, _SCALAR_TYPES[node.name])
        return ok and (node.name == "bool" or not isinstance(value, bool))
    return False

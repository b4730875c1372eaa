"""The typed tree a tool's JSON Schema is normalised into, once (by ``typemap``).

Type hints are rendered from these nodes, default values are checked against them and
versioning compares them, so nothing ever parses a rendered hint string back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

Scalar: TypeAlias = Literal["str", "int", "float", "bool"]


@dataclass(frozen=True)
class Primitive:
    name: Scalar


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
    """An object: ``dict[str, value]``. ``fields`` when it declares properties (those
    are validated by a model in ``models.py``, not by the hint)."""

    value: Node
    fields: bool = False


@dataclass(frozen=True)
class UnionOf:
    members: tuple[Node, ...]


@dataclass(frozen=True)
class Optional:
    """``T | None``."""

    inner: Node


@dataclass(frozen=True)
class AnyOf:
    """``Any``; ``reason`` says why nothing narrower was possible ("" for an open schema)."""

    reason: str = ""


Node: TypeAlias = Primitive | LiteralOf | ListOf | TupleOf | DictOf | UnionOf | Optional | AnyOf
ANY = AnyOf()
NONE = LiteralOf((None,))  # a bare ``None`` cannot nest in a hint TRL reads


def render(node: Node) -> str:
    """The Python type hint of ``node``."""
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
    if isinstance(node, UnionOf):
        return " | ".join(render(m) for m in node.members)
    if isinstance(node, Optional):
        return f"{render(node.inner)} | None"
    return "Any"


def union(members: list[Node]) -> Node:
    """``A | B``, duplicates dropped; any ``Any`` member makes the whole union ``Any``."""
    # Keyed by the rendered hint: ``Literal[1]`` and ``Literal[True]`` compare equal.
    unique = list({render(m): m for m in members}.values())
    if any(isinstance(m, AnyOf) for m in unique):
        return ANY
    return unique[0] if len(unique) == 1 else UnionOf(tuple(unique))


def nullable(node: Node, is_nullable: bool) -> Node:
    """``node | None`` when ``is_nullable`` (``Any`` already admits ``None``)."""
    if not is_nullable or isinstance(node, (AnyOf, Optional)):
        return node
    return Optional(node)


def uses_literal(node: Node) -> bool:
    if isinstance(node, LiteralOf):
        return True
    if isinstance(node, (ListOf, Optional)):
        return uses_literal(node.item if isinstance(node, ListOf) else node.inner)
    if isinstance(node, DictOf):
        return uses_literal(node.value)
    if isinstance(node, (TupleOf, UnionOf)):
        return any(
            uses_literal(n) for n in (node.items if isinstance(node, TupleOf) else node.members)
        )
    return False


def members(node: Node) -> list[Node]:
    """Top-level members of a union (``None`` as ``NONE``)."""
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


def default_source(value: Any, node: Node, is_nullable: bool) -> str | None:
    """``repr`` of a schema default when it is an immutable literal that fits ``node``."""
    if value is None:
        return "None" if is_nullable else None
    if not isinstance(value, (bool, int, float, str)):
        return None  # lists and objects are mutable: documented, never a Python default
    if isinstance(value, float) and not math.isfinite(value):
        return None  # ``repr`` would be ``nan``/``inf``, which is not a literal
    return repr(value) if fits(value, node) else None

"""Degenerate actions: schema-valid arguments for a tool, built from its JSON Schema alone
(never from guesses about the environment), deterministic for a seed.

- :func:`minimal`: only the required fields, each at its least value: an empty string (or
  the shortest ``minLength`` allows), zero (or the bound), ``False``, the first enum value,
  the first ``anyOf``/``oneOf`` option, an empty array (or ``minItems`` minimal items);
- :func:`seeded`: every field, filled from a seeded generator within the schema's bounds.

A tool that takes no arguments gets ``{}``: calling it is a degenerate action too."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any

from orsgen.jsonobject import as_array, as_object, is_array, is_object

# More schema-valid instances per tool besides the minimal one (issue 46: "a few").
SEEDED_PER_TOOL = 2
_DEPTH = 6  # nested objects and $ref chains deeper than this are cut short
_WORDS = ("a", "yes", "0", "done", "answer", "none", "x y", "ok", "?", "true")


def _resolve(schema: Any, root: Mapping[str, Any], depth: int) -> Mapping[str, Any]:
    """``schema`` with a local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) followed."""
    node = as_object(schema)
    for _ in range(_DEPTH):
        ref = node.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return node
        target: Any = root
        for part in ref[2:].split("/"):
            target = as_object(target).get(part)
        # A ref's siblings (pydantic puts a description beside it) stay; the target adds.
        node = {**as_object(target), **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _types(node: Mapping[str, Any]) -> list[str]:
    kind = node.get("type")
    if isinstance(kind, str):
        return [kind]
    if is_array(kind):
        return [str(k) for k in kind]
    if is_object(node.get("properties")):
        return ["object"]
    return []


def _number(node: Mapping[str, Any], integer: bool, rng: random.Random | None) -> float | int:
    low = node.get("minimum", node.get("exclusiveMinimum"))
    high = node.get("maximum", node.get("exclusiveMaximum"))
    lo = float(low) if isinstance(low, (int, float)) else None
    hi = float(high) if isinstance(high, (int, float)) else None
    step = 1.0 if integer else 0.5
    if "exclusiveMinimum" in node and lo is not None:
        lo += step
    if "exclusiveMaximum" in node and hi is not None:
        hi -= step
    if rng is None:
        value = 0.0
    else:
        value = rng.choice((1.0, 2.0, 7.0, -1.0, 100.0))
    if lo is not None and value < lo:
        value = lo
    if hi is not None and value > hi:
        value = hi
    if integer:
        return int(value)
    return value


def _string(node: Mapping[str, Any], rng: random.Random | None) -> str:
    least = node.get("minLength")
    most = node.get("maxLength")
    text = "" if rng is None else rng.choice(_WORDS)
    if isinstance(least, int) and len(text) < least:
        text = text + "a" * (least - len(text))
    if isinstance(most, int) and len(text) > most:
        text = text[:most]
    return text


def _instance(schema: Any, root: Mapping[str, Any], rng: random.Random | None, depth: int) -> Any:
    node = _resolve(schema, root, depth)
    if "const" in node:
        return node["const"]
    if is_array(node.get("enum")) and node["enum"]:
        options = list(node["enum"])
        return options[0] if rng is None else rng.choice(options)
    for key in ("anyOf", "oneOf"):
        options = [o for o in as_array(node.get(key)) if is_object(o)]
        if options:
            if rng is not None:
                real = [o for o in options if o.get("type") != "null"] or options
                return _instance(rng.choice(real), root, rng, depth + 1)
            return _instance(options[0], root, rng, depth + 1)
    all_of = [o for o in as_array(node.get("allOf")) if is_object(o)]
    if all_of:
        merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
        for part in all_of:
            merged.update(_resolve(part, root, depth))
        return _instance(merged, root, rng, depth + 1)
    types = _types(node)
    kind = types[0] if types else "string"
    if rng is not None and len(types) > 1:
        kind = rng.choice([t for t in types if t != "null"] or types)
    if kind == "null":
        return None
    if kind == "boolean":
        return False if rng is None else rng.random() < 0.5
    if kind in ("integer", "number"):
        return _number(node, kind == "integer", rng)
    if kind == "array":
        least = node.get("minItems")
        count = least if isinstance(least, int) else 0
        if rng is not None:
            most = node.get("maxItems")
            count = max(count, rng.randint(0, 2))
            if isinstance(most, int):
                count = min(count, most)
        if depth >= _DEPTH:
            return []
        return [_instance(node.get("items", {}), root, rng, depth + 1) for _ in range(count)]
    if kind == "object":
        return _object(node, root, rng, depth)
    return _string(node, rng)


def _object(
    node: Mapping[str, Any], root: Mapping[str, Any], rng: random.Random | None, depth: int
) -> dict[str, Any]:
    properties = as_object(node.get("properties"))
    required = {str(r) for r in as_array(node.get("required"))}
    out: dict[str, Any] = {}
    if depth >= _DEPTH:
        return out
    for name, sub in properties.items():
        if name in required or (rng is not None and rng.random() < 0.7):
            out[str(name)] = _instance(sub, root, rng, depth + 1)
    return out


def minimal(schema: Any) -> dict[str, Any]:
    """Only the required fields, each at its least schema-valid value."""
    root = as_object(schema)
    return _object(_resolve(root, root, 0), root, None, 0) if root else {}


def seeded(schema: Any, rng: random.Random) -> dict[str, Any]:
    """Every field (optional ones most of the time), from ``rng`` within the schema's bounds."""
    root = as_object(schema)
    return _object(_resolve(root, root, 0), root, rng, 0) if root else {}


def takes_arguments(schema: Any) -> bool:
    return bool(as_object(as_object(schema).get("properties")))


def degenerate(tool: str, schema: Any, seed: int) -> list[dict[str, Any]]:
    """The degenerate arguments of ``tool``: the minimal instance first, then up to
    :data:`SEEDED_PER_TOOL` seeded ones (deduplicated); ``[{}]`` for a tool without
    arguments. The same ``seed`` and schema give the same list, whatever else runs."""
    found = [minimal(schema)]
    if takes_arguments(schema):
        rng = random.Random(f"{seed}:{tool}")
        for _ in range(SEEDED_PER_TOOL * 3):  # a few tries: small schemas repeat themselves
            if len(found) > SEEDED_PER_TOOL:
                break
            candidate = seeded(schema, rng)
            if all(_key(candidate) != _key(f) for f in found):
                found.append(candidate)
    return found


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)

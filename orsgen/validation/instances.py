"""Degenerate actions: schema-valid arguments for a tool, built from its JSON Schema alone
(never from guesses about the environment), deterministic for a seed.

- the minimal instance: only the required fields, each at its least value: an empty string
  (or the shortest ``minLength`` allows), zero (or the bound), ``False``, the first enum
  value, the first ``anyOf``/``oneOf`` option, an empty array (or ``minItems`` minimal items);
- seeded instances: every field, filled from a seeded generator within the schema's bounds.

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


def resolve(schema: Any, root: Mapping[str, Any]) -> Mapping[str, Any]:
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
    value = 0.0 if rng is None else rng.choice((1.0, 2.0, 7.0, -1.0, 100.0))
    value = value if lo is None else max(value, lo)
    value = value if hi is None else min(value, hi)
    return int(value) if integer else value


def _string(node: Mapping[str, Any], rng: random.Random | None) -> str:
    least = node.get("minLength")
    most = node.get("maxLength")
    text = "" if rng is None else rng.choice(_WORDS)
    text = text.ljust(least, "a") if isinstance(least, int) else text
    return text[:most] if isinstance(most, int) else text


def _instance(schema: Any, root: Mapping[str, Any], rng: random.Random | None, depth: int) -> Any:
    node = resolve(schema, root)
    if "const" in node:
        return node["const"]
    if is_array(node.get("enum")) and node["enum"]:
        options = list(node["enum"])
        return options[0] if rng is None else rng.choice(options)
    for key in ("anyOf", "oneOf"):
        options = [o for o in as_array(node.get(key)) if is_object(o)]
        if options:
            real = [o for o in options if o.get("type") != "null"] or options
            return _instance(options[0] if rng is None else rng.choice(real), root, rng, depth + 1)
    all_of = [o for o in as_array(node.get("allOf")) if is_object(o)]
    if all_of:
        merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
        for part in all_of:
            merged.update(resolve(part, root))
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


def _arguments(schema: Any, rng: random.Random | None) -> dict[str, Any]:
    """The minimal instance (no ``rng``), else a seeded one (optional fields most of the time)."""
    root = as_object(schema)
    return _object(resolve(root, root), root, rng, 0) if root else {}


def degenerate(tool: str, schema: Any, seed: int) -> list[dict[str, Any]]:
    """The degenerate arguments of ``tool``: the minimal instance first, then up to
    :data:`SEEDED_PER_TOOL` seeded ones (deduplicated); ``[{}]`` for a tool without
    arguments. The same ``seed`` and schema give the same list, whatever else runs."""
    found = [_arguments(schema, None)]
    if as_object(as_object(schema).get("properties")):  # it takes arguments
        rng = random.Random(f"{seed}:{tool}")
        for _ in range(SEEDED_PER_TOOL * 3):  # a few tries: small schemas repeat themselves
            if len(found) > SEEDED_PER_TOOL:
                break
            candidate = _arguments(schema, rng)
            key = json.dumps(candidate, sort_keys=True, default=str)
            if all(key != json.dumps(f, sort_keys=True, default=str) for f in found):
                found.append(candidate)
    return found

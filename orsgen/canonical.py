"""Canonical JSON and its hashes, for the snapshotter, the generator and the drift guard.
Standard library only, so the runtime hashes exactly as stored without the generator."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from orsgen.jsonobject import is_object


def canonical_json(value: Any) -> str:
    """Sorted keys, fixed separators, non-ASCII kept, trailing newline: byte-stable."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=2) + "\n"


def sha256_of(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def tools_sha256(environment: Mapping[str, Any]) -> str:
    """Hash of the tool surface alone (shared plus task tools), for the runtime drift guard."""
    # A section that lists no task tools hashes as one with an empty list.
    tools, task_tools = environment.get("tools", []), environment.get("task_tools", [])
    return sha256_of({"tools": tools, "task_tools": task_tools})


def spec_dict(spec: Any) -> dict[str, Any]:
    """A tool spec (SDK ``ToolSpec`` or wire dict) in the snapshot's stored form."""
    keys = ("name", "description", "input_schema")
    said = spec if is_object(spec) else {k: getattr(spec, k, None) for k in keys}
    schema = said.get("input_schema")
    out: dict[str, Any] = {
        "name": str(said.get("name")),
        "description": str(said.get("description") or ""),
        "input_schema": schema,
    }
    if is_object(spec) and "property_order" in spec:  # already in stored form
        out["property_order"] = list(spec["property_order"])
    elif is_object(schema) and is_object(schema.get("properties")):
        out["property_order"] = [str(k) for k in schema["properties"]]
    return out

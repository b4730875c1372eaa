"""Fidelity benchmark: how much of each tool schema the model sees through get_json_schema.

Serves the SDK's built-in office, CLI and web toolsets (``openreward.toolsets``) from one
local ORS environment on 127.0.0.1, then, in the same run:

- orsgen: snapshot, generate, import the package, ``get_json_schema`` on every method;
- TRL's bridge (``trl.experimental.openreward.OpenRewardSpec``): build its environment
  and ``get_json_schema`` on every method it bound.

Each side is scored on the same schema facts, taken from the wire schemas: every
property exists; its required-ness; its types; its enum values; its array item types;
its nullability; its description (and the tool's); the names of nested object fields
(in the nested schema or the description). Prints a table and writes
``bench/results/fidelity.json``.

Run: ``python bench/fidelity.py``
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from openreward.environments import Environment, TextBlock
from openreward.toolsets import (
    CLIToolset,
    ExcelToolset,
    PDFToolset,
    PowerPointToolset,
    WebToolset,
    WordToolset,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "fidelity.json"
TOOLSETS = [ExcelToolset, WordToolset, PowerPointToolset, PDFToolset, CLIToolset, WebToolset]
CATEGORIES = [
    "tool_description",
    "property",
    "required",
    "type",
    "enum",
    "items_type",
    "nullable",
    "description",
    "nested_field",
]


class ToolsetsEnv(Environment):
    """Every office, CLI and web toolset of the SDK, as shared tools (schemas only)."""

    toolsets = TOOLSETS

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict[str, Any]]:
        return [{"id": 0}]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text="Use the tools.")]


# ---- schema facts -------------------------------------------------------------------


def _norm(text: Any) -> str:
    return " ".join(str(text or "").split())


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    for _ in range(10):
        if isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str):
            node: Any = root
            for part in schema["$ref"][1:].split("/")[1:]:
                node = node.get(part) if isinstance(node, Mapping) else None
            schema = {**(node or {}), **{k: v for k, v in schema.items() if k != "$ref"}}
        else:
            break
    return schema if isinstance(schema, Mapping) else {}


_JSON = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _types(schema: Any, root: Mapping[str, Any]) -> set[str]:
    schema = _resolve(schema, root)
    out: set[str] = set()
    kind = schema.get("type")
    if isinstance(kind, str):
        out.add(kind)
    elif isinstance(kind, list):
        out.update(k for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or []:
            out |= _types(branch, root)
    if not out and isinstance(schema.get("enum"), list):
        out = {_JSON.get(type(v), "null") for v in schema["enum"]}
    if "integer" in out and "number" in out:
        out.discard("integer")
    return out - {"null"}


def _nullable(schema: Any, root: Mapping[str, Any]) -> bool:
    schema = _resolve(schema, root)
    if schema.get("nullable") is True or None in (schema.get("enum") or []):
        return True
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_nullable(b, root) for key in ("anyOf", "oneOf") for b in schema.get(key) or [])


def _enum(schema: Any, root: Mapping[str, Any]) -> list[Any] | None:
    schema = _resolve(schema, root)
    if isinstance(schema.get("enum"), list):
        return [v for v in schema["enum"] if v is not None]
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or []:
            found = _enum(branch, root)
            if found:
                return found
    return None


def _items(schema: Any, root: Mapping[str, Any]) -> Any:
    schema = _resolve(schema, root)
    if "items" in schema:
        return schema["items"]
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or []:
            found = _items(branch, root)
            if found is not None:
                return found
    return None


def _nested_fields(schema: Any, root: Mapping[str, Any], depth: int = 0) -> set[str]:
    schema = _resolve(schema, root)
    if depth > 4:
        return set()
    out = set(schema.get("properties") or {}) if depth else set()
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or []:
            out |= _nested_fields(branch, root, depth + 1 if not depth else depth)
    if "items" in schema:
        out |= _nested_fields(schema["items"], root, depth + 1)
    for name, prop in (schema.get("properties") or {}).items() if depth else ():
        out |= _nested_fields(prop, root, depth + 1)
    return out


def score_tool(
    spec: Mapping[str, Any], shown: Mapping[str, Any] | None, names: Mapping[str, str]
) -> Counter[str]:
    """Facts of one wire tool spec and how many of them ``shown`` (a get_json_schema
    function entry, or ``None`` when the tool was dropped) conveys. ``names`` maps wire
    parameter names to the names the model sees."""
    facts: Counter[str] = Counter()
    root = spec.get("input_schema") or {}
    shown_params = (shown or {}).get("parameters", {})
    shown_props = shown_params.get("properties", {})
    shown_required = set(shown_params.get("required", []))

    def fact(category: str, ok: bool) -> None:
        facts[f"{category}:total"] += 1
        facts[f"{category}:seen"] += int(bool(ok) and shown is not None)

    if _norm(spec.get("description")):
        fact(
            "tool_description",
            _norm(spec["description"]) in _norm((shown or {}).get("description")),
        )
    required = set(root.get("required") or [])
    for wire, raw in (root.get("properties") or {}).items():
        seen = shown_props.get(names.get(wire, wire))
        fact("property", seen is not None)
        seen = seen or {}
        fact(
            "required",
            (wire in required) == (names.get(wire, wire) in shown_required) and bool(seen),
        )
        types = _types(raw, root)
        if types:
            fact("type", types == _types(seen, {}))
        values = _enum(raw, root)
        if values:
            fact(
                "enum",
                _enum(seen, {}) is not None
                and sorted(map(repr, values)) == sorted(map(repr, _enum(seen, {}) or [])),
            )
        items = _items(raw, root)
        if items is not None and _types(items, root):
            fact("items_type", _types(items, root) == _types(_items(seen, {}) or {}, {}))
        fact("nullable", _nullable(raw, root) == _nullable(seen, {}) and bool(seen))
        desc = _norm(_resolve(raw, root).get("description"))
        if desc:
            fact("description", desc in _norm(seen.get("description")))
        text = _norm(seen.get("description")) + json.dumps(seen)
        for name in sorted(_nested_fields(raw, root)):
            fact("nested_field", bool(seen) and name in text)
    return facts


# ---- the two bridges ----------------------------------------------------------------


def orsgen_view(
    url: str, workdir: Path
) -> tuple[dict[str, dict[str, Any] | None], dict[str, dict[str, str]]]:
    from transformers.utils import get_json_schema

    from orsgen.generate.pipeline.run import Request, run

    out = workdir / "fidelity_orsgen"
    result = run(Request(url, out, env_name="toolsetsenv", class_name="ToolsetsEnv"))
    if not result.written:
        raise SystemExit("\n".join(d.format() for d in result.diagnostics))
    sys.path.insert(0, str(workdir))
    cls = importlib.import_module("fidelity_orsgen").ToolsetsEnv
    shown: dict[str, dict[str, Any] | None] = {}
    names: dict[str, dict[str, str]] = {}
    for method, (wire, params) in cls.WIRE_NAMES.items():
        shown[wire] = _safe(lambda m=method: get_json_schema(getattr(cls, m))["function"])
        names[wire] = {w: p for p, w in params.items()}
    return shown, names


def trl_view(url: str) -> tuple[dict[str, dict[str, Any] | None], dict[str, dict[str, str]]]:
    import inspect

    from transformers.utils import get_json_schema
    from trl.experimental.openreward import OpenRewardSpec

    spec = OpenRewardSpec(url, env_name="toolsetsenv")
    env = spec.environment_factory()
    shown: dict[str, dict[str, Any] | None] = {}
    for name, fn in inspect.getmembers(type(env), inspect.isfunction):
        if name.startswith("_") or name in ("reset", "get_reward"):
            continue
        shown[name] = _safe(lambda f=fn: get_json_schema(f)["function"])
    return shown, {}


def _safe(make: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
    try:
        return make()
    except Exception:  # noqa: BLE001 - a schema TRL cannot show counts as nothing seen
        return None


def measure() -> dict[str, Any]:
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "examples")]  # ors_server, serve_model
    import ors_server

    server = ors_server.start(Path(__file__).resolve(), envs=["ToolsetsEnv"])
    saved = {k: os.environ.get(k) for k in ("OPENREWARD_API_URL", "OPENREWARD_SESSION_URL")}
    os.environ["OPENREWARD_API_URL"] = os.environ["OPENREWARD_SESSION_URL"] = server.url
    try:
        specs = {t.name: t.model_dump() for t in ToolsetsEnv.list_tools().tools}
        with tempfile.TemporaryDirectory() as tmp:
            sides = {"orsgen": orsgen_view(server.url, Path(tmp)), "trl": trl_view(server.url)}
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        server.stop()
    report: dict[str, Any] = {"toolsets": [t.__name__ for t in TOOLSETS], "tools": len(specs)}
    for side, (shown, names) in sides.items():
        total: Counter[str] = Counter()
        for wire, spec in specs.items():
            total += score_tool(spec, shown.get(wire), names.get(wire, {}))
        by_category = {
            c: {"seen": total[f"{c}:seen"], "total": total[f"{c}:total"]}
            for c in CATEGORIES
            if total[f"{c}:total"]
        }
        seen = sum(v["seen"] for v in by_category.values())
        facts = sum(v["total"] for v in by_category.values())
        report[side] = {
            "fidelity": round(seen / facts, 4) if facts else 0.0,
            "facts": facts,
            "seen": seen,
            "tools_bound": sum(1 for w in specs if shown.get(w) is not None),
            "categories": by_category,
        }
    return report


def table(report: Mapping[str, Any]) -> str:
    rows = [f"{'fact':<18}{'orsgen':>16}{'TRL bridge':>16}"]
    for c in CATEGORIES:
        cells = []
        for side in ("orsgen", "trl"):
            v = report[side]["categories"].get(c)
            cells.append(f"{v['seen']}/{v['total']}" if v else "-")
        rows.append(f"{c:<18}{cells[0]:>16}{cells[1]:>16}")
    rows.append(
        f"{'tools bound':<18}{report['orsgen']['tools_bound']:>16}{report['trl']['tools_bound']:>16}"
    )
    rows.append(
        f"{'FIDELITY':<18}{report['orsgen']['fidelity']:>16.4f}{report['trl']['fidelity']:>16.4f}"
    )
    return "\n".join(rows)


def main() -> None:
    report = measure()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{report['tools']} tools from {', '.join(report['toolsets'])}")
    print(table(report))
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

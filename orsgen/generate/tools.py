"""From snapshot tool specs to the per-method facts the adapter template needs."""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orsgen.diagnostics import Diagnostic, error, warning
from orsgen.generate import docstrings, naming
from orsgen.generate.describe import describe, needs_structure
from orsgen.generate.models import ModelRequest, has_object_fields
from orsgen.generate.typemap import TypeContext, child, deref, hint_for, short_json, with_null

_LINE = 100  # black's line length (render.BLACK_LINE_LENGTH)
_SCALAR_CHECK: dict[str, type | tuple[type, ...]] = {
    "str": str,
    "int": int,
    "float": (int, float),
    "bool": bool,
}


@dataclass
class ParamView:
    name: str
    wire: str
    hint: str
    required: bool
    default: str  # Python source of the default ("" when required)
    send_condition: str  # when an optional argument is sent
    description: str

    @property
    def signature(self) -> str:
        return f"{self.name}: {self.hint}" + ("" if self.required else f" = {self.default}")

    @property
    def wire_literal(self) -> str:
        return repr(self.wire)


@dataclass
class ToolView:
    method: str
    wire: str
    description: str
    params: list[ParamView] = field(default_factory=list)
    docstring: str = ""
    # Nested-object parameters to validate client-side (filled in by ``generate``).
    model_request: ModelRequest | None = None
    model_class: str = ""  # class in models.py, "" when nothing is validated
    model_names: str = ""  # Python source of the ``{wire: python}`` mapping

    @property
    def wire_literal(self) -> str:
        return repr(self.wire)

    @property
    def optional_params(self) -> list[ParamView]:
        return [p for p in self.params if not p.required]

    @property
    def parameters(self) -> str:
        """The parameter list, pre-split the way black would split it when it is long
        (black is the slowest step for big environments; splitting here saves it work)."""
        parts = ["self", *(p.signature for p in self.params)]
        one_line = ", ".join(parts)
        if len(f"    def {self.method}({one_line}) -> _Content:") <= _LINE:
            return one_line
        return "\n" + "".join(f"        {part},\n" for part in parts) + "    "

    @property
    def required_args(self) -> str:
        pairs = [f"{p.wire_literal}: {p.name}" for p in self.params if p.required]
        one_line = "{" + ", ".join(pairs) + "}"
        if len(f"        _args: dict[str, Any] = {one_line}") <= _LINE:
            return one_line
        return "{\n" + "".join(f"            {pair},\n" for pair in pairs) + "        }"


def _show(wire: str, limit: int = 60) -> str:
    """A wire name for a message: ``repr``'d, and shortened when very long."""
    text = repr(wire)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def _literal_values(hint: str) -> list[Any] | None:
    """The values of a ``Literal[...]`` hint that orsgen wrote itself (``repr``'d values)."""
    if not (hint.startswith("Literal[") and hint.endswith("]")):
        return None
    try:
        values = ast.literal_eval("[" + hint[len("Literal[") : -1] + "]")
    except (ValueError, SyntaxError):
        return None  # e.g. a union of Literals; too clever to guess, so no default
    return values if isinstance(values, list) else None


def _fits(value: Any, hint: str) -> bool:
    if hint == "Any":
        return True
    values = _literal_values(hint)
    if values is not None:
        return any(type(v) is type(value) and v == value for v in values)
    if " | " in hint:
        return any(_fits(value, part) for part in hint.split(" | ") if "[" not in part)
    base = _SCALAR_CHECK.get(hint)
    if base is None:
        return False
    return isinstance(value, base) and (hint == "bool" or not isinstance(value, bool))


def _default_source(value: Any, hint: str, nullable: bool) -> str | None:
    """``repr`` of a schema default when it is an immutable literal that fits the hint."""
    if value is None:
        return "None" if nullable else None
    if not isinstance(value, (bool, int, float, str)):
        return None  # lists and objects are mutable: documented, never a Python default
    if isinstance(value, float) and not math.isfinite(value):
        return None  # ``repr`` would be ``nan``/``inf``, which is not a literal
    return repr(value) if _fits(value, hint) else None


def build_tool(
    spec: Mapping[str, Any],
    method: str,
    diagnostics: list[Diagnostic],
    param_renames: Mapping[str, str] | None = None,
) -> ToolView | None:
    """The view of one tool, or ``None`` after an error diagnostic that names it."""
    wire = str(spec["name"])
    schema = spec.get("input_schema")
    ctx = TypeContext(root=schema if isinstance(schema, Mapping) else {}, tool=wire)
    tool = ToolView(method=method, wire=wire, description=str(spec.get("description") or ""))
    if schema is None:
        schema = {}
    if not isinstance(schema, Mapping):
        diagnostics.append(
            error(wire, "", "input_schema is not a JSON object; cannot type this tool")
        )
        return None
    schema, _ = deref(ctx, schema, "", frozenset())
    if not isinstance(schema, Mapping):
        schema = {}
    kind = schema.get("type")
    if kind not in (None, "object") and not (isinstance(kind, list) and "object" in kind):
        diagnostics.append(
            error(
                wire,
                "/type",
                f"input_schema has type {kind!r}; a tool's arguments must be an object",
            )
        )
        return None
    props = schema.get("properties") or {}
    if not isinstance(props, Mapping):
        diagnostics.append(error(wire, "/properties", "properties is not a JSON object"))
        return None
    required_raw = schema.get("required") or []
    required = [str(r) for r in required_raw] if isinstance(required_raw, list) else []
    wires = list(props)
    for name in required:
        if name not in props:
            wires.append(name)
            diagnostics.append(
                warning(wire, "/required", f"required parameter {name!r} has no schema; typed Any")
            )
    order = spec.get("property_order")
    if isinstance(order, list) and sorted(map(str, order)) == sorted(map(str, props)):
        wires = [str(w) for w in order] + [w for w in wires if w not in props]
    for key in ("patternProperties",):
        if key in schema:
            diagnostics.append(
                warning(wire, f"/{key}", f"{key} cannot be expressed as parameters; ignored")
            )
    if schema.get("additionalProperties") not in (None, False, {}):
        diagnostics.append(
            warning(
                wire,
                "/additionalProperties",
                "extra undeclared arguments cannot be passed through a typed method",
            )
        )
    preferred = _checked_renames(
        wire, param_renames or {}, wires, naming.RESERVED_PARAMS, "rename.params", diagnostics
    )
    names = naming.param_names(wires, preferred)
    for w in wires:
        if names[w] != w and w not in preferred:
            diagnostics.append(
                warning(
                    wire,
                    child("/properties", w),
                    f"parameter {_show(w)} is named {names[w]!r} in Python",
                )
            )
    params: list[ParamView] = []
    for w in wires:
        pointer = child("/properties", w)
        pschema = props.get(w, {})
        hint, nullable = hint_for(ctx, pschema, pointer)
        is_required = w in required
        description = _param_description(ctx, w, pschema, pointer)
        default = ""
        condition = ""
        if not is_required:
            raw_default = pschema.get("default", ...) if isinstance(pschema, Mapping) else ...
            source = None if raw_default is ... else _default_source(raw_default, hint, nullable)
            if raw_default is not ... and source is None and raw_default is not None:
                if isinstance(raw_default, (list, dict)):
                    message = "mutable default is documented, not used as the Python default"
                else:
                    message = (
                        f"default {short_json(raw_default)} does not fit type {hint}; left unset"
                    )
                ctx.warn(child(pointer, "default"), message)
            if source is not None:
                default = source
                condition = (
                    f"{names[w]} is not {source}"
                    if source in ("None", "True", "False")
                    else f"{names[w]} != {source}"
                )
            else:
                default = "_UNSET"
                condition = f"{names[w]} is not _UNSET"
        hint = with_null(hint, nullable)
        params.append(
            ParamView(
                name=names[w],
                wire=w,
                hint=hint,
                required=is_required,
                default=default,
                send_condition=condition,
                description=description,
            )
        )
    diagnostics.extend(ctx.diagnostics)
    nested = {
        w: props[w]
        for w in wires
        if w in props and isinstance(props[w], Mapping) and has_object_fields(props[w], ctx.root)
    }
    if nested:
        tool.model_request = ModelRequest(
            method=method,
            wire=wire,
            root=ctx.root,
            params=nested,
            required=[w for w in required if w in nested],
            python_names={w: names[w] for w in nested},
        )
    # Python needs required parameters first; keep the schema order within each group.
    tool.params = [p for p in params if p.required] + [p for p in params if not p.required]
    tool.docstring = method_docstring(tool)
    return tool


def _param_description(ctx: TypeContext, wire: str, schema: Any, pointer: str) -> str:
    text = ""
    if isinstance(schema, Mapping):
        resolved, _ = deref(TypeContext(ctx.root, ctx.tool), schema, pointer, frozenset())
        source = resolved if isinstance(resolved, Mapping) else schema
        text = str(schema.get("description") or source.get("description") or "")
        if not text:
            text = str(schema.get("title") or source.get("title") or "")
        if needs_structure(schema, ctx, pointer):
            text = f"{text} Structure: {describe(schema, ctx, pointer)}".strip()
        if "default" in schema:
            text = f"{text} (default: {short_json(schema['default'])})".strip()
    return text or f"The {wire!r} argument."


def method_docstring(tool: ToolView) -> str:
    """Escaped docstring source (without the quotes) for one tool method."""
    summary = docstrings.paragraph(tool.description) or f"Call the {tool.wire!r} tool."
    lines = [summary]
    if tool.params:
        lines.append("")
        lines.append("Args:")
        for p in tool.params:
            lines.append(f"    {p.name}: {docstrings.one_line(p.description)}")
    text = "\n".join(lines)
    body = docstrings.literal_body(text)
    if "\n" in body:
        first, rest = body.split("\n", 1)
        body = first + "\n" + docstrings.indent_body(rest, 8) + "\n        "
    return body


def tool_specs(
    environment: Mapping[str, Any], package: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """Shared tools, then task tools, filtered by the package's include/exclude options."""
    specs: list[Mapping[str, Any]] = [
        *environment.get("tools", []),
        *environment.get("task_tools", []),
    ]
    include = package.get("include")
    exclude = set(package.get("exclude") or [])
    if include:
        wanted = set(include)
        specs = [s for s in specs if s["name"] in wanted]
    return [s for s in specs if s["name"] not in exclude]


def _checked_renames(
    tool: str | None,
    renames: Mapping[str, str],
    wires: Sequence[str],
    reserved: frozenset[str],
    key: str,
    diagnostics: list[Diagnostic],
) -> dict[str, str]:
    """Configured renames that can be honoured; each one that cannot is an error naming it."""
    out: dict[str, str] = {}
    for wire, name in sorted(renames.items()):
        problem = naming.check_rename(name, reserved)
        if wire not in wires:
            problem = f"there is no {'parameter' if tool else 'tool'} {wire!r} to rename"
        elif name in out.values():
            problem = f"{name!r} is configured for two names"
        if problem:
            diagnostics.append(error(tool, "", f"config {key}: {problem}"))
            continue
        out[wire] = name
    return out


def build_tools(
    specs: Sequence[Mapping[str, Any]],
    diagnostics: list[Diagnostic],
    renames: Mapping[str, Any] | None = None,
) -> list[ToolView]:
    """One view per tool; ``renames`` is the recorded ``rename`` config
    (``{"tools": {wire: name}, "params": {wire tool: {wire param: name}}}``)."""
    renames = renames or {}
    wires = [str(s["name"]) for s in specs]
    preferred = _checked_renames(
        None,
        renames.get("tools") or {},
        wires,
        naming.RESERVED_METHODS,
        "rename.tools",
        diagnostics,
    )
    methods = naming.method_names(wires, preferred)
    param_renames: Mapping[str, Mapping[str, str]] = renames.get("params") or {}
    tools: list[ToolView] = []
    for spec in specs:
        wire = str(spec["name"])
        if methods[wire] != wire and wire not in preferred:
            diagnostics.append(
                warning(wire, "", f"tool {_show(wire)} is named {methods[wire]!r} in Python")
            )
        view = build_tool(spec, methods[wire], diagnostics, param_renames.get(wire))
        if view is not None:
            tools.append(view)
    return sorted(tools, key=lambda t: t.method)

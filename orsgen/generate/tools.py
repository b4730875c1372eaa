"""From snapshot tool specs to the per-method facts the adapter template needs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orsgen.diagnostics import Diagnostic, error, warning
from orsgen.generate import docstrings, emit, naming
from orsgen.generate import ir
from orsgen.generate.describe import describe
from orsgen.generate.model_schema import ModelRequest
from orsgen.generate.schema_refs import TypeContext, child, deref
from orsgen.generate.typemap import field_of, short_json, tool_tree
from orsgen.jsonobject import is_array, is_object
from orsgen.snapshot.stored import Environment, Package, Renames, ToolSpec


@dataclass
class ParamView:
    name: str
    wire: str
    type: ir.Node  # with ``Optional`` when the schema admits null
    required: bool
    default: Any  # the Python default's value, or ``emit.UNSET`` (unused when required)
    description: str

    @property
    def signature(self) -> str:
        default = "" if self.required else f" = {emit.default(self.default)}"
        return f"{self.name}: {ir.render(self.type)}{default}"

    @property
    def send_condition(self) -> str:
        return emit.send_condition(self.name, self.default)

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
        """The parameter list on one line; black lays it out."""
        return ", ".join(["self", *(p.signature for p in self.params)])

    @property
    def required_args(self) -> str:
        return (
            "{" + ", ".join(f"{p.wire_literal}: {p.name}" for p in self.params if p.required) + "}"
        )


def _show(wire: str) -> str:
    """A wire name for a message: ``repr``'d, and shortened when very long."""
    text = repr(wire)
    return text if len(text) <= 60 else text[:56] + "...'"


def _arguments(spec: ToolSpec, diagnostics: list[Diagnostic]) -> Mapping[str, Any] | None:
    """The tool's arguments object, or ``None`` after an error (:func:`tool_tree` warns of refs)."""
    wire = spec.name
    schema: Any = {} if spec.input_schema is None else spec.input_schema
    if not is_object(schema):
        diagnostics.append(
            error(wire, "", "input_schema is not a JSON object; cannot type this tool")
        )
        return None
    resolved = deref(TypeContext(root=schema, tool=wire), schema, "", frozenset()).schema
    arguments: Mapping[str, Any] = resolved if is_object(resolved) else {}
    kind: Any = arguments.get("type")
    if kind not in (None, "object") and not (is_array(kind) and "object" in kind):
        message = f"input_schema has type {kind!r}; a tool's arguments must be an object"
        diagnostics.append(error(wire, "/type", message))
        return None
    if not is_object(arguments.get("properties") or {}):
        diagnostics.append(error(wire, "/properties", "properties is not a JSON object"))
        return None
    return arguments


def _wire_params(
    spec: ToolSpec, props: Mapping[str, Any], required: list[str], diagnostics: list[Diagnostic]
) -> list[str]:
    """Wire parameter names in the server's order; a required name with no schema is kept."""
    wires = list(props)
    for name in required:
        if name not in props:
            wires.append(name)
            message = f"required parameter {name!r} has no schema; typed Any"
            diagnostics.append(warning(spec.name, "/required", message))
    order = spec.property_order
    if order is not None and sorted(order) == sorted(map(str, props)):
        wires = [*order, *(w for w in wires if w not in props)]
    return wires


def _param(ctx: TypeContext, field: ir.Field, name: str) -> ParamView:
    view = ParamView(
        name=name,
        wire=field.name,
        type=field.type,
        required=field.required,
        default=emit.UNSET,
        description=_param_description(field),
    )
    if field.required or not field.has_default:
        return view
    raw = field.default
    view.default = emit.python_default(raw, field.node, field.nullable)
    if view.default is emit.UNSET and raw is not None:
        if isinstance(raw, (list, dict)):
            message = "mutable default is documented, not used as the Python default"
        else:
            message = (
                f"default {short_json(raw)} does not fit type {ir.render(field.node)}; left unset"
            )
        ctx.warn(child("/properties", field.name, "default"), message)
    return view


def build_tool(
    spec: ToolSpec, method: str, diagnostics: list[Diagnostic], param_renames: Mapping[str, str]
) -> ToolView | None:
    wire = spec.name
    raw = spec.input_schema
    schema = _arguments(spec, diagnostics)
    if schema is None:
        return None
    # The one argument tree (versioning reads the same one), its warnings collected here.
    ctx = TypeContext(root=raw if is_object(raw) else {}, tool=wire)
    tree = tool_tree(raw, wire, ctx)
    props: Mapping[str, Any] = schema.get("properties") or {}
    required_raw: Any = schema.get("required") or []
    required = [str(r) for r in required_raw] if is_array(required_raw) else []
    wires = _wire_params(spec, props, required, diagnostics)
    _warn_unexpressible(wire, schema, diagnostics)
    names = _python_names(wire, wires, param_renames, diagnostics)
    declared = {f.name: f for f in tree.fields}
    fields = [declared.get(w) or field_of(ctx, w, {}, child("/properties", w), True) for w in wires]
    params = [_param(ctx, f, names[f.name]) for f in fields]
    diagnostics.extend(ctx.diagnostics)
    tool = ToolView(method=method, wire=wire, description=spec.description)
    nested = [f for f in fields if ir.has_model(f.type)]
    if nested:
        tool.model_request = ModelRequest(
            method=method,
            wire=wire,
            params=tuple(nested),
            python_names={f.name: names[f.name] for f in nested},
        )
    # Python needs required parameters first; keep the schema order within each group.
    tool.params = [p for p in params if p.required] + [p for p in params if not p.required]
    tool.docstring = method_docstring(tool)
    return tool


def _warn_unexpressible(
    wire: str, schema: Mapping[str, Any], diagnostics: list[Diagnostic]
) -> None:
    if "patternProperties" in schema:
        message = "patternProperties cannot be expressed as parameters; ignored"
        diagnostics.append(warning(wire, "/patternProperties", message))
    if schema.get("additionalProperties") not in (None, False, {}):
        message = "extra undeclared arguments cannot be passed through a typed method"
        diagnostics.append(warning(wire, "/additionalProperties", message))


def _python_names(
    wire: str, wires: list[str], renames: Mapping[str, str], diagnostics: list[Diagnostic]
) -> dict[str, str]:
    """Each wire parameter's Python name, with a warning for every name that changed unasked."""
    preferred = _checked_renames(wire, renames, wires, diagnostics)
    names = naming.param_names(wires, preferred)
    for w in wires:
        if names[w] != w and w not in preferred:
            message = f"parameter {_show(w)} is named {names[w]!r} in Python"
            diagnostics.append(warning(wire, child("/properties", w), message))
    return names


def _param_description(field: ir.Field) -> str:
    text = field.description or field.title
    if ir.has_structure(field.type):
        text = f"{text} Structure: {describe(field.type)}".strip()
    if field.has_default:
        text = f"{text} (default: {short_json(field.default)})".strip()
    return text or f"The {field.name!r} argument."


def method_docstring(tool: ToolView) -> str:
    summary = docstrings.paragraph(tool.description) or f"Call the {tool.wire!r} tool."
    args = [f"    {p.name}: {docstrings.one_line(p.description)}" for p in tool.params]
    lines = [summary, "", "Args:", *args] if args else [summary]
    body = docstrings.literal_body("\n".join(lines))
    if "\n" in body:
        first, rest = body.split("\n", 1)
        body = first + "\n" + docstrings.indent_body(rest, 8) + "\n        "
    return body


def tool_specs(environment: Environment, package: Package) -> list[ToolSpec]:
    """Shared tools, then task tools, filtered by the package's include/exclude."""
    specs = environment.all_tools
    if package.include:
        wanted = set(package.include)
        specs = [s for s in specs if s.name in wanted]
    exclude = set(package.exclude)
    return [s for s in specs if s.name not in exclude]


def _checked_renames(
    tool: str | None, renames: Mapping[str, str], wires: list[str], diagnostics: list[Diagnostic]
) -> dict[str, str]:
    """The renames of ``tool``'s parameters (of tools: ``None``) that can be honoured."""
    reserved = naming.RESERVED_METHODS if tool is None else naming.RESERVED_PARAMS
    key = "rename.tools" if tool is None else "rename.params"
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
    specs: Sequence[ToolSpec], diagnostics: list[Diagnostic], renames: Renames
) -> list[ToolView]:
    wires = [s.name for s in specs]
    preferred = _checked_renames(None, renames.tools, wires, diagnostics)
    methods = naming.method_names(wires, preferred)
    tools: list[ToolView] = []
    for spec in specs:
        wire = spec.name
        if methods[wire] != wire and wire not in preferred:  # `tool 'a-b': the Python method...`
            diagnostics.append(warning(wire, "", f"the Python method is named {methods[wire]!r}"))
        view = build_tool(spec, methods[wire], diagnostics, renames.params.get(wire, {}))
        if view is not None:
            tools.append(view)
    return sorted(tools, key=lambda t: t.method)

"""Pydantic models for nested-object parameters, written by datamodel-code-generator.

Only parameters whose type node holds an object with fields (directly, in list items
or in a union branch: ``ir.has_model``) get a model: those are the arguments the model
cannot see typed in the signature, so the adapter validates them client-side before
any round trip.

Every tool becomes one ``<Pascal>Args`` model holding just its nested parameters
(aliased to their wire names); tools whose nodes have identical shapes share their
classes (see :class:`_Names`). All tools go through one in-memory
``datamodel_code_generator.generate`` call. The schema handed to it is written from
the type nodes, so it holds structure only (types, properties, required, items,
enums): no description, title, default, pattern or format can reach source or run at
import time. An object reached through a ``$ref`` becomes a tool-prefixed ``$defs``
entry; remote and dangling refs are already ``Any``; nothing is ever fetched.

A model that datamodel-code-generator cannot produce, or whose output fails the
checks, is left out with a warning: that tool's nested arguments are then only
described, not validated. Never a crash, never a silent drop.
"""

from __future__ import annotations

import ast
import contextlib
import io
import sys
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from orsgen.diagnostics import Diagnostic, warning
from orsgen.generate import ir, model_defaults, naming

ROOT_CLASS = "OrsgenModelsRoot"
_JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


@dataclass
class ToolModel:
    """The validation model of one tool: class name and its ``{wire: python}`` parameters."""

    class_name: str
    params: dict[str, str]


@dataclass
class ModelsResult:
    body: str = ""  # Python source after the header, or "" when there are no models
    models: dict[str, ToolModel] = field(default_factory=dict)  # by method name
    diagnostics: list[Diagnostic] = field(default_factory=list)


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
    """One class per distinct shape of node, however many tools use it. A class is first
    named after its first tool (``<Tool><Ref>``, ``<Tool>Args``); one that several tools
    (or refs) share then takes its plain name when that is free (see :meth:`final`)."""

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
    """Writes nodes as the structural JSON Schema datamodel-code-generator reads: one
    ``$defs`` entry per class (an object reached through a ``$ref``, or a tool's ``Args``)."""

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


def _combined_schema(requests: list[ModelRequest]) -> tuple[dict[str, Any], dict[str, str]]:
    """The one schema handed to datamodel-code-generator, and each tool's ``Args`` class."""
    classes = _class_names(requests)
    emitter = _Emitter(classes)
    args: dict[str, str] = {}
    for req in requests:
        emitter.refs = {}
        args[req.method] = classes[_args_shape(req.params)]
        emitter.define(args[req.method], req.params, None)
    return {"type": "object", "properties": {}, "$defs": emitter.defs}, args


def _run_codegen(schema: dict[str, Any]) -> str:
    from datamodel_code_generator import InputFileType, LiteralType, PythonVersion, generate
    from datamodel_code_generator.enums import DataModelType

    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        out = generate(
            schema,
            input_file_type=InputFileType.JsonSchema,
            output_model_type=DataModelType.PydanticV2BaseModel,
            target_python_version=PythonVersion.PY_311,
            formatters=[],  # pinned: orsgen formats the whole file itself with black
            disable_timestamp=True,
            enum_field_as_literal=LiteralType.All,
            use_standard_collections=True,
            use_union_operator=True,
            use_field_description=False,
            use_schema_description=False,
            allow_remote_refs=False,
            strict_nullable=True,  # a default does not make a field nullable
            class_name=ROOT_CLASS,
        )
    if not isinstance(out, str):
        raise ValueError("datamodel-code-generator returned no single module")
    return out


def _strip(source: str) -> str:
    """Drop datamodel-code-generator's header comments and the placeholder root class."""
    tree = ast.parse(source)
    lines = source.splitlines()
    drop: set[int] = set()
    for node in tree.body:
        end = node.end_lineno or node.lineno
        if isinstance(node, ast.ClassDef) and node.name == ROOT_CLASS:
            drop.update(range(node.lineno - 1, end))
        elif _rebuild_target(node) == ROOT_CLASS:
            drop.update(range(node.lineno - 1, end))
    kept = [line for i, line in enumerate(lines) if i not in drop]
    while kept and (kept[0].startswith("#") or not kept[0].strip()):
        kept.pop(0)
    return "\n".join(kept) + "\n"


def _rebuild_target(node: ast.stmt) -> str | None:
    """``Name`` for a top-level ``Name.model_rebuild()`` statement, else ``None``."""
    if (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == "model_rebuild"
        and isinstance(node.value.func.value, ast.Name)
        and not node.value.args
        and not node.value.keywords
    ):
        return node.value.func.value.id
    return None


_ALLOWED_EXPR = (
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Constant,
    ast.Tuple,
    ast.List,
    ast.BinOp,
    ast.BitOr,
    ast.Load,
    ast.UnaryOp,
    ast.USub,
    ast.Call,
    ast.keyword,
    ast.Dict,
    ast.Lambda,  # ``Field(default_factory=lambda: [...])``; only Field/ConfigDict calls pass
    ast.arguments,
)
_ALLOWED_CALLS = frozenset({"Field", "ConfigDict"})
_ALLOWED_IMPORTS = frozenset({"__future__", "typing", "pydantic", "enum", model_defaults.RUNTIME})


def _check_class(node: ast.ClassDef) -> None:
    """A model class: plain bases, and a body of annotated fields, constants, a docstring
    or ``pass``, each value passing :func:`_check_expr`."""
    if node.decorator_list or node.keywords:
        raise ValueError(f"class {node.name} has decorators or keywords")
    for base in node.bases:
        _check_expr(base)
    for stmt in node.body:
        if isinstance(stmt, ast.Pass):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            _check_expr(stmt.annotation)
            if stmt.value is not None:
                _check_expr(stmt.value)
            continue
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            _check_expr(stmt.value)
            continue
        raise ValueError(f"class {node.name}: unexpected {type(stmt).__name__}")


def check_models_source(source: str) -> list[str]:
    """Class names defined by ``source``, after a whitelist check of its whole tree.

    Only imports from known modules, ``BaseModel``/``RootModel``/``Enum`` classes whose
    bodies hold annotated fields and constants, and ``X.model_rebuild()`` are allowed;
    the only calls allowed in a class body are ``Field(...)`` and ``ConfigDict(...)``."""
    tree = ast.parse(source)
    classes: list[str] = []
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # module docstring
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.target.id == "__all__" and isinstance(node.value, ast.List):
                _check_expr(node.value)
                continue
        if isinstance(node, ast.ImportFrom):
            if node.module not in _ALLOWED_IMPORTS or node.level:
                raise ValueError(f"unexpected import from {node.module!r}")
        elif isinstance(node, ast.ClassDef):
            _check_class(node)
            classes.append(node.name)
        elif _rebuild_target(node) in classes:
            continue
        else:
            raise ValueError(f"unexpected top-level {type(node).__name__}")
    return classes


def _check_expr(expr: ast.expr) -> None:
    for sub in ast.walk(expr):
        if not isinstance(sub, _ALLOWED_EXPR):
            raise ValueError(f"unexpected {type(sub).__name__} in a model")
        if isinstance(sub, ast.Call) and not (
            isinstance(sub.func, ast.Name) and sub.func.id in _ALLOWED_CALLS
        ):
            raise ValueError("unexpected call in a model")


def _build_check(source: str) -> None:
    """Build the classes once in a throwaway module, so a model that pydantic rejects
    (a name clash, an unresolvable annotation) is caught here, not at import time.
    The source already passed :func:`check_models_source`: it holds declarations only."""
    name = f"_orsgen_models_check_{id(source):x}"
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        exec(compile(source, f"<{name}>", "exec"), module.__dict__)  # noqa: S102
        for value in list(module.__dict__.values()):
            if isinstance(value, type) and getattr(value, "__module__", None) == name:
                getattr(value, "model_rebuild", lambda: None)()
    finally:
        del sys.modules[name]


def _attempt(requests: list[ModelRequest]) -> tuple[str, dict[str, str]]:
    schema, classes = _combined_schema(requests)
    source = model_defaults.typed(_strip(_run_codegen(schema)))
    defined = set(check_models_source(source))
    missing = [c for c in classes.values() if c not in defined]
    if missing:
        raise ValueError(f"model class {missing[0]} was not generated")
    _build_check(source)
    return source, classes


def _each_alone(requests: list[ModelRequest], diagnostics: list[Diagnostic]) -> list[ModelRequest]:
    """The requests whose models generate on their own; each other one is a warning."""
    good: list[ModelRequest] = []
    for req in requests:
        try:
            _attempt([req])
            good.append(req)
        except Exception as exc:  # noqa: BLE001 - any failure is this tool's
            reason = " ".join(str(exc).split())[:200] or type(exc).__name__
            diagnostics.append(_unvalidated(req, f"no model could be generated ({reason})"))
    return good


def _unvalidated(req: ModelRequest, why: str) -> Diagnostic:
    return warning(
        req.wire, "", f"nested arguments are described but not validated client-side: {why}"
    )


def build_models(requests: list[ModelRequest]) -> ModelsResult:
    """One models module for every request; a request that breaks generation is
    isolated and left out with a warning naming its tool."""
    result = ModelsResult()
    if not requests:
        return result
    requests = sorted(requests, key=lambda r: r.method)
    try:
        source, classes = _attempt(requests)
    except Exception:  # noqa: BLE001 - find the culprits one tool at a time
        requests = _each_alone(requests, result.diagnostics)
        if not requests:
            return result
        try:
            source, classes = _attempt(requests)
        except Exception as exc:  # noqa: BLE001 - each alone worked; together they do not
            why = f"models could not be combined ({type(exc).__name__})"
            result.diagnostics += [_unvalidated(req, why) for req in requests]
            return result
    result.body = source
    for req in requests:
        nested = {f.name: req.python_names[f.name] for f in req.params}
        result.models[req.method] = ToolModel(classes[req.method], nested)
    return result

"""Pydantic models for nested-object parameters, written by datamodel-code-generator.

Only parameters whose schema holds object fields (directly, in list items or in a
union branch) get a model: those are the arguments the model cannot see typed in the
signature, so the adapter validates them client-side before any round trip.

Every tool becomes one ``<Pascal>Args`` model holding just its nested parameters
(aliased to their wire names). All tools go through one in-memory
``datamodel_code_generator.generate`` call. The schema handed to it is *reduced*:
only structural keywords survive (types, properties, required, items, enums, refs),
so no description, title, default, pattern or format can reach source or run at
import time. Refs are rewritten to tool-prefixed ``$defs``; remote and dangling refs
become ``{}`` (any); nothing is ever fetched.

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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orsgen.diagnostics import Diagnostic, warning
from orsgen.generate import naming
from orsgen.jsonobject import is_array, is_object

ROOT_CLASS = "OrsgenModelsRoot"
# Keywords that carry structure; everything else (descriptions, titles, defaults,
# patterns, formats, examples, vendor keys) is dropped before code generation.
_STRUCTURAL = frozenset(
    {"type", "properties", "required", "items", "prefixItems", "additionalProperties"}
    | {"enum", "const", "anyOf", "oneOf", "allOf", "$ref", "nullable"}
)
_SCHEMA_KEYS = frozenset(
    {"items", "additionalProperties", "not", "additionalItems", "contains", "propertyNames"}
)
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_TYPES = frozenset({"string", "integer", "number", "boolean", "null", "array", "object"})


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
    """One tool's nested parameters: everything needed to build its model."""

    method: str
    wire: str
    root: Mapping[str, Any]  # the tool's whole input schema (for its $defs and refs)
    params: dict[str, Mapping[str, Any]]  # wire name -> property schema
    required: list[str]
    python_names: dict[str, str]  # wire name -> Python parameter name


def has_object_fields(schema: Any, root: Mapping[str, Any], depth: int = 0) -> bool:
    """True when ``schema`` (after local refs) contains an object with declared fields."""
    if depth > 12 or not is_object(schema):
        return False
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _local_target(root, ref)
        if target is not None and has_object_fields(target, root, depth + 1):
            return True
    props = schema.get("properties")
    if is_object(props) and props:
        return True
    for key in ("items", "additionalProperties"):
        if has_object_fields(schema.get(key), root, depth + 1):
            return True
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        branches = schema.get(key)
        if is_array(branches) and any(has_object_fields(b, root, depth + 1) for b in branches):
            return True
    return False


def _local_target(root: Mapping[str, Any], ref: str) -> Any:
    if not ref.startswith("#"):
        return None
    node: Any = root
    for raw in ref[1:].split("/")[1:]:
        key = raw.replace("~1", "/").replace("~0", "~")
        if not is_object(node) or key not in node:
            return None
        node = node[key]
    return node if is_object(node) else None


class _Reducer:
    """Rewrites one tool's schema into the combined, structural-only schema."""

    def __init__(self, prefix: str, root: Mapping[str, Any], taken: set[str]) -> None:
        self.prefix = prefix
        self.root = root
        self.taken = taken
        self.defs: dict[str, Any] = {}
        self.names: dict[str, str] = {}  # local ref -> combined $defs key

    def def_key(self, ref: str) -> str:
        if ref not in self.names:
            tail = ref.rsplit("/", 1)[-1] if ref not in ("#", "#/") else "Root"
            base = f"{self.prefix}{naming.pascal_case(tail)}"
            key, n = base, 2
            while key in self.taken:
                key, n = f"{base}{n}", n + 1
            self.taken.add(key)
            self.names[ref] = key
            target = _local_target(self.root, ref) if ref not in ("#", "#/") else self.root
            self.defs[key] = {}
            self.defs[key] = self.reduce(target, 0)
        return self.names[ref]

    def reduce(self, schema: Any, depth: int) -> Any:
        if schema is True or schema is False:
            return schema
        if not is_object(schema) or depth > 24:
            return {}
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key not in _STRUCTURAL:
                continue
            if key == "$ref":
                if not isinstance(value, str) or _local_target(self.root, value) is None:
                    if value not in ("#", "#/"):
                        return {}  # remote or dangling: any (typemap already warned)
                return {"$ref": f"#/$defs/{self.def_key(value)}"}
            if key == "type":
                kinds = value if is_array(value) else [value]
                if not all(isinstance(k, str) and k in _TYPES for k in kinds):
                    return {}
                out[key] = value
            elif key == "properties" and is_object(value):
                out[key] = {str(k): self.reduce(v, depth + 1) for k, v in value.items()}
            elif key == "required" and is_array(value):
                out[key] = [str(v) for v in value]
            elif key in ("enum",) and is_array(value) and value:
                out[key] = value
            elif key == "const":
                out["enum"] = [value]
            elif key in _SCHEMA_LISTS and is_array(value) and value:
                out[key] = [self.reduce(v, depth + 1) for v in value]
            elif key in _SCHEMA_KEYS:
                out[key] = self.reduce(value, depth + 1)
            elif key == "nullable" and value is True:
                out[key] = True
        return out


def _class_prefix(method: str, taken: set[str]) -> str:
    base = naming.pascal_case(method)
    name, n = base, 2
    while f"{name}Args" in taken:
        name, n = f"{base}{n}", n + 1
    return name


def _combined_schema(requests: list[ModelRequest]) -> tuple[dict[str, Any], dict[str, str]]:
    taken: set[str] = {ROOT_CLASS}
    defs: dict[str, Any] = {}
    classes: dict[str, str] = {}
    for req in requests:
        prefix = _class_prefix(req.method, taken)
        class_name = f"{prefix}Args"
        taken.add(class_name)
        reducer = _Reducer(prefix, req.root, taken)
        defs[class_name] = {
            "type": "object",
            "properties": {w: reducer.reduce(s, 0) for w, s in req.params.items()},
            "required": [w for w in req.required if w in req.params],
        }
        defs.update(reducer.defs)
        classes[req.method] = class_name
    return {"type": "object", "properties": {}, "$defs": defs}, classes


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
)
_ALLOWED_CALLS = frozenset({"Field", "ConfigDict"})
_ALLOWED_IMPORTS = frozenset({"__future__", "typing", "pydantic", "enum"})


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
                if isinstance(stmt, ast.Assign) and all(
                    isinstance(t, ast.Name) for t in stmt.targets
                ):
                    _check_expr(stmt.value)
                    continue
                raise ValueError(f"class {node.name}: unexpected {type(stmt).__name__}")
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
    source = _strip(_run_codegen(schema))
    defined = set(check_models_source(source))
    missing = [c for c in classes.values() if c not in defined]
    if missing:
        raise ValueError(f"model class {missing[0]} was not generated")
    _build_check(source)
    return source, classes


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
        good: list[ModelRequest] = []
        for req in requests:
            try:
                _attempt([req])
                good.append(req)
            except Exception as exc:  # noqa: BLE001 - any failure is this tool's
                reason = " ".join(str(exc).split())[:200] or type(exc).__name__
                result.diagnostics.append(
                    warning(
                        req.wire,
                        "",
                        "nested arguments are described but not validated client-side: "
                        f"no model could be generated ({reason})",
                    )
                )
        if not good:
            return result
        try:
            source, classes = _attempt(good)
        except Exception as exc:  # noqa: BLE001 - each alone worked; together they do not
            for req in good:
                result.diagnostics.append(
                    warning(
                        req.wire,
                        "",
                        "nested arguments are described but not validated client-side: "
                        f"models could not be combined ({type(exc).__name__})",
                    )
                )
            return result
        requests = good
    result.body = source
    for req in requests:
        nested = {w: req.python_names[w] for w in req.params}
        result.models[req.method] = ToolModel(classes[req.method], nested)
    return result

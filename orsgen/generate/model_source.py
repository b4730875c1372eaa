"""The models source datamodel-code-generator returns, made safe to write: stripped,
whitelist-checked, and built once so that pydantic's own errors surface here."""

from __future__ import annotations

import ast
import sys
import types

from orsgen.generate import model_defaults
from orsgen.generate.model_schema import ROOT_CLASS


def strip(source: str) -> str:
    tree = ast.parse(source)
    lines = source.splitlines()
    drop: set[int] = set()
    for node in tree.body:
        root = isinstance(node, ast.ClassDef) and node.name == ROOT_CLASS
        if root or _rebuild_target(node) == ROOT_CLASS:
            drop.update(range(node.lineno - 1, node.end_lineno or node.lineno))
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
    """Plain bases; a body of annotated fields, constants, a docstring or ``pass``."""
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
    """Class names defined by ``source``, after a whitelist check of its whole tree."""
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


def build_check(source: str) -> None:
    """Build the classes once in a throwaway module: a model pydantic rejects is caught here."""
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

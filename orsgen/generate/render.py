"""Jinja rendering, black formatting and the ``ast`` self-check of every emitted module."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
from typing import Any

_SOURCE_TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
BLACK_LINE_LENGTH = 100


def template_dir() -> Path:
    """Top-level ``templates/`` in a checkout; ``orsgen/_templates`` inside the wheel."""
    if (_SOURCE_TEMPLATES / "adapter.py.jinja").is_file():
        return _SOURCE_TEMPLATES
    from importlib.resources import files

    return Path(str(files("orsgen._templates")))


@lru_cache(maxsize=None)
def _environment(directory: str) -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(directory),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render(template: str, **context: Any) -> str:
    return str(_environment(str(template_dir())).get_template(template).render(**context))


def format_python(source: str) -> str:
    import black
    from black.mode import Mode, TargetVersion

    mode = Mode(line_length=BLACK_LINE_LENGTH, target_versions={TargetVersion.PY311})
    return black.format_str(source, mode=mode)


class SelfCheckError(ValueError):
    """Generated source failed to parse or holds something other than declarations."""


_ALLOWED_TOP_LEVEL = (
    ast.Import,
    ast.ImportFrom,
    ast.ClassDef,
    ast.FunctionDef,
    ast.Assign,
    ast.AnnAssign,
    ast.If,
)


def self_check(path: str, source: str) -> None:
    """The module's top level holds only imports, definitions, constants (and ``if
    TYPE_CHECKING:``), so no schema text can run on import."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise SelfCheckError(f"{path}: generated code does not parse: {exc}") from None
    if path == "models.py":
        from orsgen.generate.model_source import check_models_source

        try:
            check_models_source(source)
        except ValueError as exc:
            raise SelfCheckError(f"{path}: {exc}") from None
        return
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # module docstring
        if not isinstance(node, _ALLOWED_TOP_LEVEL):
            raise SelfCheckError(
                f"{path}: unexpected top-level {type(node).__name__} at line {node.lineno}"
            )
        if isinstance(node, ast.If) and not (
            isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        ):
            raise SelfCheckError(f"{path}: unexpected top-level `if` at line {node.lineno}")
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            _check_constant(path, node.value)


def _check_constant(path: str, value: ast.expr) -> None:
    for sub in ast.walk(value):
        if isinstance(sub, (ast.Call, ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield)):
            if (
                isinstance(sub, ast.Call)
                and isinstance(sub.func, ast.Name)
                and sub.func.id == "frozenset"
            ):
                continue
            raise SelfCheckError(
                f"{path}: top-level assignment at line {value.lineno} is not a constant"
            )

"""Defaults in the validation models, as strict as the schema.

A field the schema lets be null is ``X | None``; every other optional field keeps its
type. Its default is the schema's when that is a literal of the field's type (``low:
int = 0``; a list or map through ``Field(default_factory=...)``), else the runtime's
``OMITTED``: omitting it validates, but an explicit ``None`` does not (pydantic never
validates a default), just as on the server.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from orsgen.generate import ir
from orsgen.jsonobject import is_array, is_object

NO_DEFAULT: Any = None  # what a non-null optional field without a usable default gets
# Its default in the model: ``None``, typed ``Any`` (``orsgen.runtime.validate.OMITTED``), so
# the field keeps its type with no ``# type: ignore``; it only lets the field be omitted.
_OMITTED = "_OMITTED"
RUNTIME = "orsgen.runtime.validate"  # the one runtime module models.py imports (OMITTED)
_OMITTED_IMPORT = f"from {RUNTIME} import OMITTED as _OMITTED"


def schema_default(f: ir.Field) -> tuple[bool, Any]:
    if f.required:
        return False, None
    if f.has_default and _fits(f.default, f.node):
        return True, f.default
    return (False, None) if f.nullable else (True, NO_DEFAULT)


def _fits(value: Any, node: ir.Node) -> bool:
    if isinstance(value, float) and not math.isfinite(value):
        return False  # ``nan``/``inf`` have no literal
    if is_array(value):
        return isinstance(node, ir.ListOf) and all(_fits(v, node.item) for v in value)
    if is_object(value):
        return isinstance(node, ir.DictOf) and all(_fits(v, node.value) for v in value.values())
    if value is None:
        return False
    return ir.fits(value, node)


def _admits_none(annotation: ast.expr) -> bool:
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return True
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _admits_none(annotation.left) or _admits_none(annotation.right)
    return False


def _replacement(stmt: ast.AnnAssign) -> tuple[ast.expr, str] | None:
    value = stmt.value
    if value is None:
        return None
    if isinstance(value, ast.Constant) and value.value is None:
        return None if _admits_none(stmt.annotation) else (value, _OMITTED)
    if isinstance(value, (ast.List, ast.Dict)):
        return value, f"Field(default_factory=lambda: {ast.unparse(value)})"
    if not isinstance(value, ast.Call) or not value.args:
        return None
    first = value.args[0]
    if isinstance(first, (ast.List, ast.Dict)):
        return first, f"default_factory=lambda: {ast.unparse(first)}"
    if isinstance(first, ast.Constant) and first.value is None:
        if not _admits_none(stmt.annotation):
            return first, _OMITTED  # ``Field(None, alias=...)``
    return None


def typed(source: str) -> str:
    """``x: T = None`` (non-null) becomes ``x: T = _OMITTED``; a list or map, a factory."""
    tree = ast.parse(source)
    lines = source.split("\n")
    edits: list[tuple[int, int, int, str]] = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            found = _replacement(stmt) if isinstance(stmt, ast.AnnAssign) else None
            if found is None or stmt.lineno != stmt.end_lineno:
                continue
            expr, text = found
            edits.append((expr.lineno - 1, expr.col_offset, expr.end_col_offset or 0, text))
    if not edits:
        return source
    for row, start, end, text in sorted(edits, reverse=True):
        line = lines[row].encode()  # ast offsets count UTF-8 bytes
        lines[row] = (line[:start] + text.encode() + line[end:]).decode()
    out = "\n".join(lines)
    if any("Field(" in text for *_, text in edits):
        out = _import_field(out)
    if any(text == _OMITTED for *_, text in edits):
        out = _import_omitted(out)
    return out


def _import_field(source: str) -> str:
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "pydantic":
            if any(a.name == "Field" for a in node.names):
                return source
            lines = source.split("\n")
            names = sorted([*(a.name for a in node.names), "Field"])
            lines[node.lineno - 1] = f"from pydantic import {', '.join(names)}"
            return "\n".join(lines)
    return source


def _import_omitted(source: str) -> str:
    tree = ast.parse(source)
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    row = max((n.end_lineno or n.lineno for n in imports), default=0)
    lines = source.split("\n")
    lines.insert(row, _OMITTED_IMPORT)
    return "\n".join(lines)

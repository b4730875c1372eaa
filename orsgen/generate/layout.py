"""black, applied to the adapter one method at a time, each distinct method shape once.

black lays out a method by its own tokens, so a method formatted in a stand-in class, its
name and wire name swapped for same-width placeholders and its docstring for a stub, gives
the whole module's text; methods of one shape share one black run. A wire name black would
re-quote is formatted as it is. Byte-for-byte black's output: ``tests/test_generate_layout.py``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

Formatter = Callable[[str], str]

_STAND_IN = "class _:\n"
_DOC_STUB = '        """D"""'
_PLAIN = re.compile(r"[A-Za-z0-9_.\-]*")  # repr and black quote these alike: 'x' -> "x"


def _methods(tree: ast.Module) -> tuple[ast.ClassDef, list[ast.FunctionDef]] | None:
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            defs = [n for n in node.body if isinstance(n, ast.FunctionDef)]
            if defs and not any(d.decorator_list for d in defs):
                return node, defs
    return None


class _Layout:
    def __init__(self, black: Formatter) -> None:
        self.black = black
        self.shapes: dict[str, str] = {}

    def in_class(self, lines: list[str], prefix: str = _STAND_IN) -> str:
        out = self.black(prefix + "\n".join(lines) + "\n")
        return out[len(prefix) :]

    def method(self, lines: list[str], node: ast.FunctionDef) -> str:
        abstract = self._abstract(lines, node)
        if abstract is None:
            return self.in_class(lines)
        text, name_stub, wire_stub, doc_lines = abstract
        shape = self.shapes.get(text)
        if shape is None:
            shape = self.shapes[text] = self.in_class(text.split("\n"))
        wire_literal = f'"{wire_stub[1]}"'
        sites = _wire_sites(node, wire_stub[0])
        if shape.count(_DOC_STUB + "\n") != 1 or shape.count(wire_literal) != len(sites):
            return self.in_class(lines)
        out = shape.replace(f"    def {name_stub}(", f"    def {node.name}(", 1)
        out = out.replace(wire_literal, f'"{wire_stub[0]}"')
        doc = self.in_class(doc_lines, _STAND_IN + "    def _(self):\n")
        return out.replace(_DOC_STUB + "\n", doc, 1)

    def _abstract(
        self, lines: list[str], node: ast.FunctionDef
    ) -> tuple[str, str, tuple[str, str], list[str]] | None:
        """The method with name, wire name and docstring stubbed, or ``None``."""
        first = node.lineno
        doc = node.body[0] if node.body else None
        last = node.body[-1]
        if not (
            isinstance(doc, ast.Expr)
            and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)
            and doc.end_lineno is not None
            and isinstance(last, ast.Return)
            and isinstance(last.value, ast.Call)
            and last.value.args
            and isinstance(last.value.args[0], ast.Constant)
            and isinstance(last.value.args[0].value, str)
            and last.lineno == last.end_lineno
        ):
            return None
        wire = last.value.args[0].value
        if not _PLAIN.fullmatch(wire) or not node.name.isascii():
            return None  # a placeholder of the same width must lay out alike

        def at(number: int) -> int:  # a line number of the module, as an index into ``lines``
            return number - first

        name_stub = "m" * len(node.name)
        wire_stub = "w" * len(wire)
        head = lines[0].replace(f"def {node.name}(", f"def {name_stub}(", 1)
        body = lines[at(doc.end_lineno) + 1 : at(last.lineno) + 1]
        for row in _wire_sites(node, wire):  # the return's ``_call`` and any ``_fail``
            i = row - doc.end_lineno - 1
            body[i] = body[i].replace(repr(wire), repr(wire_stub), 1)
        text = "\n".join([head, *lines[1 : at(doc.lineno)], _DOC_STUB, *body])
        doc_lines = lines[at(doc.lineno) : at(doc.end_lineno) + 1]
        return text, name_stub, (wire, wire_stub), doc_lines


def _wire_sites(node: ast.FunctionDef, wire: str) -> list[int]:
    """The (module) lines of one-line ``self._call``/``self._fail`` calls with ``wire``."""
    return sorted(
        call.lineno
        for call in ast.walk(node)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "self"
        and call.func.attr in ("_call", "_fail")
        and call.args
        and isinstance(call.args[0], ast.Constant)
        and call.args[0].value == wire
        and call.lineno == call.end_lineno
    )


def format_module(source: str, black: Formatter) -> str:
    """``black(source)``, method by method when ``source`` holds a class of methods."""
    tree = ast.parse(source)
    found = _methods(tree)
    if found is None:
        return black(source)
    cls, defs = found
    lines = source.split("\n")
    body_end = max(d.end_lineno or d.lineno for d in defs)
    if cls.end_lineno != body_end or cls.body[len(cls.body) - len(defs) :] != defs:
        return black(source)  # methods not last in the class: lay it out whole
    layout = _Layout(black)
    head = black("\n".join(lines[: defs[0].lineno - 1]) + "\n")
    methods = [layout.method(lines[d.lineno - 1 : d.end_lineno or d.lineno], d) for d in defs]
    rest = "\n".join(lines[body_end:]).strip("\n")
    tail = "\n\n" + black(rest + "\n") if rest else ""
    return head + "\n" + "\n".join(methods) + tail

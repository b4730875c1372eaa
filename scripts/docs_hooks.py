"""MkDocs hooks: pages generated from the code at build time, so they cannot drift.

- ``docs/reference/cli.md``: the ``<!-- cli-reference -->`` marker becomes the help of every
  command's argparse parser. The commands are found in ``orsgen.cli.main``'s dispatch
  (``argv[0] == "NAME"``), so a new subcommand is in the reference as soon as it dispatches.
- ``docs/reference/api.md``: the ``<!-- api-reference -->`` marker becomes one mkdocstrings
  entry per name of ``orsgen.__all__``, grouped as ``orsgen._PUBLIC`` lists them.

``python scripts/docs_hooks.py cli`` (or ``api``) prints what the marker becomes.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLI_MARKER = "<!-- cli-reference -->"
API_MARKER = "<!-- api-reference -->"


@dataclass(frozen=True)
class Command:
    """One command line: ``orsgen`` itself or ``orsgen NAME``."""

    name: str  # "" for `orsgen TARGET -o DIR`
    module: str
    parser: str  # the module's function that builds its argparse parser

    @property
    def words(self) -> str:
        return f"orsgen {self.name}".strip()

    def build(self) -> argparse.ArgumentParser:
        built = getattr(importlib.import_module(self.module), self.parser)()
        assert isinstance(built, argparse.ArgumentParser), (self.module, self.parser)
        return built


def commands() -> list[Command]:
    """``orsgen`` and every subcommand ``orsgen.cli.main`` dispatches, in its order.

    A subcommand's branch either calls a function of cli.py (``run_check`` builds
    ``_check_parser``) or imports ``main`` from a module, whose parser is its ``_parser()``.
    """
    source = (ROOT / "orsgen" / "cli.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    found = [Command("", "orsgen.cli", "_generate_parser")]
    for node in ast.walk(main):
        if not isinstance(node, ast.If):
            continue
        name = _dispatched_name(node.test)
        if name is None:
            continue
        module = next(
            (s.module for s in ast.walk(node) if isinstance(s, ast.ImportFrom) and s.module),
            None,
        )
        if module is not None:
            found.append(Command(name, module, "_parser"))
        else:
            found.append(Command(name, "orsgen.cli", f"_{name}_parser"))
    return found


def _dispatched_name(test: ast.expr) -> str | None:
    """``NAME`` of a test ``argv and argv[0] == "NAME"`` (or ``argv[0] == "NAME"``)."""
    parts = test.values if isinstance(test, ast.BoolOp) else [test]
    for part in parts:
        if (
            isinstance(part, ast.Compare)
            and isinstance(part.left, ast.Subscript)
            and isinstance(part.ops[0], ast.Eq)
            and isinstance(part.comparators[0], ast.Constant)
            and isinstance(part.comparators[0].value, str)
        ):
            return part.comparators[0].value
    return None


def _help(parser: argparse.ArgumentParser) -> str:
    # A fixed width: the page must not depend on the terminal that built it.
    formatter: Any = parser.formatter_class  # its own, e.g. a raw epilog listing the commands
    parser.formatter_class = lambda prog: formatter(prog, width=100)
    return parser.format_help().rstrip()


def _options_table(parser: argparse.ArgumentParser) -> str:
    rows = ["| option | default | meaning |", "| --- | --- | --- |"]
    for action in parser._actions:  # argparse has no public list of a parser's actions
        if isinstance(action, argparse._HelpAction):
            continue
        names = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.dest}`"
        default = action.default
        shown = "" if default in (None, False, [], argparse.SUPPRESS) else f"`{default!r}`"
        meaning = (action.help or "").replace("|", "\\|")
        rows.append(f"| {names} | {shown} | {meaning} |")
    return "\n".join(rows)


def cli_reference() -> str:
    parts = []
    for command in commands():
        parser = command.build()
        parts.append(
            f"## `{command.words}`\n\n"
            f"```text\n{_help(parser)}\n```\n\n"
            f"{_options_table(parser)}\n"
        )
    return "\n".join(parts)


def api_reference() -> str:
    sys.path.insert(0, str(ROOT))
    import orsgen

    groups: list[tuple[str, list[str]]] = []
    for name, module in orsgen._PUBLIC.items():
        if not groups or groups[-1][0] != module:
            groups.append((module, []))
        groups[-1][1].append(name)
    parts = []
    for module, names in groups:
        parts.append(f"## From `{module}`\n")
        for name in names:
            value = getattr(orsgen, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                parts.append(f"::: orsgen.{name}\n    options:\n      show_root_full_path: false\n")
            else:  # a type alias or a constant: its value is its documentation
                parts.append(f"### `{name}`\n\n`{name} = {_alias(value)}`\n")
    return "\n".join(parts)


def _alias(value: Any) -> str:
    return str(value).replace("orsgen.runtime.images.", "")


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    if API_MARKER in markdown:
        markdown = markdown.replace(API_MARKER, api_reference())
    return markdown


if __name__ == "__main__":
    print(cli_reference() if sys.argv[1:] == ["cli"] else api_reference())

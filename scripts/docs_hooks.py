"""MkDocs hooks: pages generated from the code at build time, so they cannot drift.

- ``docs/reference/cli.md``: the ``<!-- cli-reference -->`` marker becomes the help of every
  command's argparse parser, for each command of ``orsgen.cli.COMMANDS``: the registry the
  dispatch reads, so a new subcommand is in the reference as soon as it dispatches.
- ``docs/reference/api.md``: the ``<!-- api-reference -->`` marker becomes one mkdocstrings
  entry per name of ``orsgen.__all__``, grouped as ``orsgen._PUBLIC`` lists them.

``python scripts/docs_hooks.py cli`` (or ``api``) prints what the marker becomes.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orsgen.arguments import Command  # noqa: E402
from orsgen.cli import COMMANDS  # noqa: E402

CLI_MARKER = "<!-- cli-reference -->"
API_MARKER = "<!-- api-reference -->"


def commands() -> list[Command]:
    """``orsgen`` and every subcommand, in the order ``orsgen.cli.COMMANDS`` lists them."""
    return list(COMMANDS)


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

"""Diagnostics: what the generator or the snapshotter could not do cleanly, as data."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Level = Literal["warning", "error"]


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One finding. ``tool`` is the tool's wire name and ``pointer`` a JSON pointer into
    its input schema (``""`` for the tool as a whole)."""

    level: Level
    tool: str | None
    pointer: str
    message: str

    def format(self) -> str:
        """``warning: tool 'x' at /properties/y: message``, long names shortened for display."""
        where = ""
        if self.tool is not None:
            where = f" tool {_clip(repr(self.tool))}"
            if self.pointer:
                where += f" at {_clip(self.pointer)}"
        message = _clip(self.message, 600)
        return f"{self.level}:{where}: {message}" if where else f"{self.level}: {message}"


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def warning(tool: str | None, pointer: str, message: str) -> Diagnostic:
    return Diagnostic("warning", tool, pointer, message)


def error(tool: str | None, pointer: str, message: str) -> Diagnostic:
    return Diagnostic("error", tool, pointer, message)


def has_errors(diagnostics: list[Diagnostic]) -> bool:
    return any(d.level == "error" for d in diagnostics)


GROUP_AT = 3  # this many tools with the same finding make one line
_SHOWN = 3  # tools named on a grouped line


def grouped(diagnostics: Sequence[Diagnostic], verbose: bool = False) -> list[str]:
    """Readable lines, errors first; one finding in ``GROUP_AT`` or more tools is one line
    (unless ``verbose``). Counts (``--fail-on-warning``) stay per finding."""
    ordered = sorted(diagnostics, key=lambda d: (d.level != "error", d.tool or "", d.pointer))
    if verbose:
        return [d.format() for d in ordered]
    tools: dict[tuple[str, str, str], list[str]] = {}
    for d in ordered:
        if d.tool is not None:
            tools.setdefault((d.level, d.pointer, d.message), []).append(d.tool)
    lines: list[str] = []
    done: set[tuple[str, str, str]] = set()
    for d in ordered:
        key = (d.level, d.pointer, d.message)
        names = tools.get(key, [])
        if len(names) < GROUP_AT:
            lines.append(d.format())
        elif key not in done:
            done.add(key)
            lines.append(_group_line(d, names))
    return lines


def _group_line(first: Diagnostic, tools: list[str]) -> str:
    where = f" at {_clip(first.pointer)}" if first.pointer else ""
    shown = ", ".join(_clip(repr(t), 40) for t in tools[:_SHOWN])
    return (
        f"{first.level}{where}: {_clip(first.message, 600)} ... in {len(tools)} tools: "
        f"{shown}, ... (use --verbose for each)"
    )

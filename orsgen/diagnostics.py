"""Diagnostics: what the generator or the snapshotter could not do cleanly, as data."""

from __future__ import annotations

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
        """One readable line: ``warning: tool 'x' at /properties/y: message``. Very long
        names are shortened for display only; the data keeps them whole."""
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

"""Counts in messages read as English: "1 tool", "2 tools"."""

from __future__ import annotations


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``plural(1, "tool")`` is ``"1 tool"``; ``plural(2, "tool")`` is ``"2 tools"``."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"

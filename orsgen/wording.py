"""How messages word things, for every layer: counts, near misses, cut texts."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence


def plural(count: int, noun: str) -> str:
    """``plural(1, "tool")`` is ``"1 tool"``; ``plural(2, "tool")`` is ``"2 tools"``."""
    return f"{count} {noun if count == 1 else noun + 's'}"


def cut(text: str, limit: int | None) -> str:
    """``text`` with at most ``limit`` characters kept, saying how many were cut."""
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def task_list(indices: Sequence[int]) -> str:
    """ "tasks 0, 3", "task 2" or "none": never a bare index that reads as a count."""
    if not indices:
        return "none"
    return f"task{'s' if len(indices) > 1 else ''} {', '.join(map(str, indices))}"


def closest(name: str, valid: Iterable[str]) -> str | None:
    """The valid name nearest to ``name`` (``"--spilt"`` -> ``"--split"``), if any is close."""
    found = difflib.get_close_matches(name, sorted(set(valid)), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    """``"; did you mean '--split'?"`` for a near miss, else ``""`` (to append to a message)."""
    match = closest(name, valid)
    return f"; did you mean {match!r}?" if match is not None else ""

"""What one task-tool probe learns: its tools merged into the snapshot's by name, and
whether its prompt holds an image (``fetch`` opens the probe sessions)."""

from __future__ import annotations

import asyncio
from typing import Any

from orsgen.diagnostics import Diagnostic, warning

# Seconds a probe waits for a prompt (it waits for the environment's setup).
PROMPT_WAIT = 30.0


def short(exc: BaseException) -> str:
    text = " ".join((str(exc) or type(exc).__name__).split())
    return text if len(text) <= 300 else text[:297] + "..."


def merge_probed(
    specs: list[dict[str, Any]],
    index: int,
    seen: dict[str, tuple[dict[str, Any], int]],
    merged: dict[str, dict[str, Any]],
    diagnostics: list[Diagnostic],
) -> None:
    """Merge task ``index``'s tools into ``merged`` by name: the first schema ``seen`` wins."""
    for spec in specs:
        name = spec["name"]
        if name not in seen:
            seen[name] = (spec, index)
            merged[name] = spec
        elif seen[name][0] != spec:
            first = seen[name][1]
            where = "the shared tool list" if first < 0 else f"task {first}"
            diagnostics.append(
                warning(
                    name, "", f"schema differs between {where} and task {index}; keeping the first"
                )
            )


async def prompt_has_image(session: Any, index: int, diagnostics: list[Diagnostic]) -> bool | None:
    """Whether the task's prompt holds an image block (a slow one is a warning)."""
    try:
        blocks = await asyncio.wait_for(session.get_prompt(), PROMPT_WAIT)
    except Exception as exc:  # noqa: BLE001 - only an image hint; the tools are what matter
        diagnostics.append(
            warning(None, "", f"could not read the prompt of task {index}: {short(exc)}")
        )
        return None
    listed: list[Any] = list(blocks or [])
    return any(getattr(b, "type", None) == "image" for b in listed)

"""Turning ORS content blocks into the text a model sees."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from orsgen.jsonobject import is_object


def blocks_to_text(blocks: Iterable[Any]) -> str:
    """Join text blocks with newlines; name every non-text block instead of dropping it."""
    parts: list[str] = []
    for block in blocks:
        kind = block.get("type") if is_object(block) else getattr(block, "type", None)
        if kind == "text":
            text = block.get("text") if is_object(block) else getattr(block, "text", "")
            if text:
                parts.append(str(text))
        elif kind == "image":
            mime = block.get("mimeType") if is_object(block) else getattr(block, "mimeType", "")
            parts.append(f"[image block omitted: {mime}]")
        else:
            parts.append(f"[{kind} block omitted]")
    return "\n".join(parts)

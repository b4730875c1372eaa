"""Turning ORS content blocks into the text a model sees."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from orsgen.jsonobject import is_object
from orsgen.runtime import images


def blocks_to_text(blocks: Iterable[Any]) -> str:
    """Join text blocks with newlines; an image becomes a short placeholder with its mime
    type and pixel size, and any other block is named instead of dropped."""
    parts: list[str] = []
    for block in blocks:
        kind = images.kind(block)
        if kind == "text":
            text = block.get("text") if is_object(block) else getattr(block, "text", "")
            if text:
                parts.append(str(text))
        elif kind == "image":
            parts.append(images.placeholder(block))
        else:
            parts.append(f"[{kind} block omitted]")
    return "\n".join(parts)


def blocks_to_content(blocks: Iterable[Any], multimodal: bool) -> images.Content:
    """``multimodal``: a TRL content list when the blocks hold an image (see
    :mod:`orsgen.runtime.images`); otherwise, and for text-only blocks, the text."""
    blocks = list(blocks)
    if not multimodal or not any(images.kind(b) == "image" for b in blocks):
        return blocks_to_text(blocks)
    return images.to_content(blocks, blocks_to_text)

"""Tool outputs with images, as OpenAI chat content parts (``multimodal=True`` adapters)."""

from __future__ import annotations

import base64
import io
from typing import Any

from orsgen.jsonobject import is_object


def openai_parts(content: list[Any]) -> list[dict[str, Any]]:
    """A TRL content list (``{"type": "text"}`` and ``{"type": "image", "image": PIL}``
    parts) as chat-completions parts: text as it is, images as PNG data URLs."""
    parts: list[dict[str, Any]] = []
    for part in content:
        if is_object(part) and part.get("type") == "image" and "image" in part:
            buffer = io.BytesIO()
            image: Any = part["image"]  # a PIL.Image.Image
            image.save(buffer, format="PNG")
            url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
            parts.append({"type": "image_url", "image_url": {"url": url}})
        elif is_object(part) and "text" in part:
            parts.append({"type": "text", "text": str(part["text"])})
        else:
            parts.append({"type": "text", "text": str(part)})
    return parts

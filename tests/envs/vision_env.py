"""An ORS environment whose prompt and tool outputs carry images (no Pillow needed).

The prompt is text, a 64x48 PNG, then text. ``show(kind)`` answers with text, one
image block of the given kind, and text: ``png`` (a real 32x32 PNG), ``corrupt``
(broken base64), ``svg`` (a mime type orsgen does not decode) or ``huge`` (a PNG
header that claims 20000x20000 pixels). ``answer(text)`` scores 1.0 for "red".
"""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Literal

from pydantic import BaseModel, Field

from openreward.environments import Environment, ImageBlock, TextBlock, ToolOutput, tool


def png(width: int, height: int, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A solid-colour RGB PNG, built by hand."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    row = b"\x00" + bytes(rgb) * width
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def huge_png_header() -> bytes:
    """Valid signature and IHDR for 20000x20000, then a tiny (wrong) IDAT."""
    full = png(1, 1)
    ihdr = struct.pack(">IIBBBBB", 20000, 20000, 8, 2, 0, 0, 0)
    chunk = (
        struct.pack(">I", len(ihdr))
        + b"IHDR"
        + ihdr
        + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    )
    return full[:8] + chunk + full[8 + 25 :]


PROMPT_IMAGE = b64(png(64, 48))
IMAGES = {
    "png": ("image/png", b64(png(32, 32, (10, 200, 10)))),
    "corrupt": ("image/png", "!!!not base64!!!"),
    "svg": ("image/svg+xml", b64(b"<svg xmlns='http://www.w3.org/2000/svg'/>")),
    "huge": ("image/png", b64(huge_png_header())),
}


class ShowInput(BaseModel):
    kind: Literal["png", "corrupt", "svg", "huge"] = Field(description="Which image to show.")


class AnswerInput(BaseModel):
    text: str = Field(description="The colour of the first image.")


class VisionEnv(Environment):
    """Name the colour of the image."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [{"colour": "red"}, {"colour": "red"}]

    def get_prompt(self) -> list[TextBlock | ImageBlock]:
        return [
            TextBlock(text="What colour is this image?"),
            ImageBlock(data=PROMPT_IMAGE, mimeType="image/png"),
            TextBlock(text="Answer with the answer tool."),
        ]

    @tool
    def show(self, params: ShowInput) -> ToolOutput:
        """Show another image."""
        mime, data = IMAGES[params.kind]
        return ToolOutput(
            blocks=[
                TextBlock(text="before"),
                ImageBlock(data=data, mimeType=mime),
                TextBlock(text="after"),
            ],
            reward=0.0,
            finished=False,
        )

    @tool
    def answer(self, params: AnswerInput) -> ToolOutput:
        """Name the colour."""
        right = params.text.strip().lower() == "red"
        return ToolOutput(
            blocks=[TextBlock(text="right" if right else "wrong")],
            reward=1.0 if right else 0.0,
            finished=True,
        )

"""ORS content blocks as the model sees them (docs/training.md, "Images: the content-list
contract"): TRL's content list, or text with a one-line placeholder per image. An image that
cannot be shown becomes a text part that says why; nothing here raises into the trainer.
Pillow is imported on the first image only; placeholder sizes come from the header.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import importlib
import importlib.util
import io
import struct
import warnings
from collections.abc import Iterable
from typing import IO, Any, Literal, Protocol, TypedDict, cast

from orsgen.jsonobject import is_object

# Larger images would cost the trainer more memory than any tool result is worth.
MAX_IMAGE_BYTES = 32 * 1024 * 1024
MAX_IMAGE_PIXELS = 6000 * 6000
# Mime type -> Pillow format. Only these are decoded, so untrusted bytes never reach
# Pillow's rarer decoders.
SUPPORTED = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/jpg": "JPEG",
    "image/gif": "GIF",
    "image/webp": "WEBP",
    "image/bmp": "BMP",
}


class ImageLike(Protocol):
    """An image part's image: a loaded ``PIL.Image.Image`` at run time, typed by a few of
    its members so that no checker needs Pillow installed to resolve it. For the rest of
    Pillow's API, narrow with ``isinstance(image, PIL.Image.Image)``."""

    @property
    def size(self) -> tuple[int, int]: ...
    @property
    def width(self) -> int: ...
    @property
    def height(self) -> int: ...
    @property
    def mode(self) -> str: ...
    @property
    def format(self) -> str | None: ...


class _OpenedImage(ImageLike, Protocol):
    def load(self) -> object: ...


class PillowImageModule(Protocol):
    """The part of ``PIL.Image`` used here (tests/typecheck/pillow_contract.py checks it)."""

    def open(
        self, fp: IO[bytes], mode: Literal["r"] = ..., formats: list[str] | None = ...
    ) -> _OpenedImage: ...


class TextPart(TypedDict):
    type: Literal["text"]
    text: str


class ImagePart(TypedDict):
    type: Literal["image"]
    image: ImageLike


ContentPart = TextPart | ImagePart
# What reset() and every tool method return: text, or (multimodal=True, and only when
# an image is in the output) a TRL content list in block order.
Content = str | list[ContentPart]


def require_pillow() -> None:
    if importlib.util.find_spec("PIL") is None:
        raise ImportError(
            "multimodal=True decodes images with Pillow, which is not installed: "
            "pip install 'orsgen[vision]'"
        )


def _field(block: Any, name: str) -> Any:
    return block.get(name) if is_object(block) else getattr(block, name, None)


def kind(block: Any) -> Any:
    return _field(block, "type")


def _mime(block: Any) -> str:
    """The declared mime type, made safe to show (untrusted text, bounded)."""
    text = "".join(ch for ch in str(_field(block, "mimeType") or "") if ch.isprintable())
    text = "".join(text.split())
    return (text[:60] + "...") if len(text) > 60 else (text or "unknown type")


def _decode(block: Any) -> tuple[bytes | None, str]:
    data = _field(block, "data")
    if not isinstance(data, str) or not data:
        return None, "no image data"
    if len(data) * 3 // 4 > MAX_IMAGE_BYTES:
        return None, f"larger than {MAX_IMAGE_BYTES} bytes"
    try:
        return base64.b64decode(data, validate=True), ""
    except (binascii.Error, ValueError):
        return None, "corrupt base64 data"


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(raw):
        if raw[i] != 0xFF:
            i += 1
            continue
        marker = raw[i + 1]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", raw[i + 5 : i + 9])
            return width, height
        if marker in (0x01, 0xD8, 0xFF) or 0xD0 <= marker <= 0xD7:
            i += 2 if marker != 0xFF else 1
            continue
        i += 2 + struct.unpack(">H", raw[i + 2 : i + 4])[0]
    return None


def image_hashes(blocks: Iterable[Any]) -> list[str]:
    """The sha256 (hex) of each image block's bytes, in block order (of its data as sent when
    that does not decode): how a recorded tool result names its images."""
    found: list[str] = []
    for block in blocks:
        if kind(block) == "image":
            raw, _ = _decode(block)
            data = raw if raw is not None else str(_field(block, "data") or "").encode()
            found.append(hashlib.sha256(data).hexdigest())
    return found


def header_size(raw: bytes) -> tuple[int, int] | None:
    """Width and height from the header of a PNG, GIF, BMP, WebP or JPEG; ``None`` when
    the bytes are none of these (no Pillow needed)."""
    try:
        if raw[:8] == b"\x89PNG\r\n\x1a\n" and raw[12:16] == b"IHDR":
            width, height = struct.unpack(">II", raw[16:24])
            return width, height
        if raw[:6] in (b"GIF87a", b"GIF89a"):
            width, height = struct.unpack("<HH", raw[6:10])
            return width, height
        if raw[:2] == b"BM":
            width, height = struct.unpack("<ii", raw[18:26])
            return abs(width), abs(height)
        if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
            chunk = raw[12:16]
            if chunk == b"VP8X":  # 24-bit little-endian width and height, minus one
                width, height = raw[24:27], raw[27:30]
                return 1 + int.from_bytes(width, "little"), 1 + int.from_bytes(height, "little")
            if chunk == b"VP8L":
                bits = int.from_bytes(raw[21:25], "little")
                return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
            if chunk == b"VP8 ":
                width, height = struct.unpack("<HH", raw[26:30])
                return width & 0x3FFF, height & 0x3FFF
        if raw[:2] == b"\xff\xd8":
            return _jpeg_size(raw)
    except struct.error:
        return None
    return None


def placeholder(block: Any) -> str:
    """``[image: image/png, 64x64]``: what a text-only model sees instead of an image."""
    raw, problem = _decode(block)
    size = header_size(raw) if raw is not None else None
    if size is not None:
        return f"[image: {_mime(block)}, {size[0]}x{size[1]}]"
    return f"[image: {_mime(block)}, {problem or 'unreadable image data'}]"


def _not_shown(mime: str, why: str) -> str:
    return f"[image not shown: {mime}: {why}]"


def _too_big(mime: str, width: int, height: int) -> str:
    return _not_shown(mime, f"{width}x{height} is more than {MAX_IMAGE_PIXELS} pixels")


def to_image(block: Any) -> ImageLike | str:
    """A loaded ``PIL.Image.Image``, or a text that says why the image cannot be shown."""
    mime = _mime(block)
    declared = str(_field(block, "mimeType") or "").strip().lower()
    fmt = SUPPORTED.get(declared)
    if fmt is None:
        return _not_shown(mime, f"unsupported type; supported: {', '.join(sorted(SUPPORTED))}")
    raw, problem = _decode(block)
    if raw is None:
        return _not_shown(mime, problem)
    size = header_size(raw)
    if size is not None and size[0] * size[1] > MAX_IMAGE_PIXELS:
        return _too_big(mime, *size)
    # Imported by name so that type-checking this module never needs Pillow installed.
    pillow = cast(PillowImageModule, importlib.import_module("PIL.Image"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # DecompressionBombWarning: checked below
            image = pillow.open(io.BytesIO(raw), formats=[fmt])
            width, height = image.size
            if width * height > MAX_IMAGE_PIXELS:
                return _too_big(mime, width, height)
            image.load()
    except Exception as exc:  # noqa: BLE001 - untrusted bytes; Pillow raises many types
        why = type(exc).__name__
        return _not_shown(mime, f"does not decode as {fmt} ({why})")
    return image


def blocks_to_text(blocks: Iterable[Any]) -> str:
    """Join text blocks with newlines; an image becomes a short placeholder with its mime
    type and pixel size, and any other block is named instead of dropped."""
    parts: list[str] = []
    for block in blocks:
        found = kind(block)
        if found == "text":
            text = _field(block, "text")
            if text:
                parts.append(str(text))
        elif found == "image":
            parts.append(placeholder(block))
        else:
            parts.append(f"[{found} block omitted]")
    return "\n".join(parts)


def blocks_to_content(blocks: Iterable[Any]) -> Content:
    """A TRL content list when the blocks hold an image that decodes, text runs joined as
    :func:`blocks_to_text` joins them; otherwise the text (``multimodal=True``)."""
    blocks = list(blocks)
    if not any(kind(b) == "image" for b in blocks):
        return blocks_to_text(blocks)
    parts: list[ContentPart] = []
    run: list[Any] = []

    def flush() -> None:
        text = blocks_to_text(run)
        if text:
            parts.append({"type": "text", "text": text})
        run.clear()

    for block in blocks:
        image = to_image(block) if kind(block) == "image" else None
        if image is None or isinstance(image, str):
            run.append(block if image is None else {"type": "text", "text": image})
            continue
        flush()
        parts.append({"type": "image", "image": image})
    flush()
    if all(p["type"] == "text" for p in parts):  # no image survived decoding
        return "\n".join(p["text"] for p in parts if p["type"] == "text")
    return parts

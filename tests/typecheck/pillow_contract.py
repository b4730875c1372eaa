"""Pillow's own types meet orsgen's image contract: a ``PIL.Image.Image`` (what
``multimodal=True`` puts in an image part) is an ``ImageLike``, a user narrows to Pillow's
full API with isinstance, and the ``PIL.Image`` module is what orsgen opens images with.
Type-checked, never run, where Pillow is installed (tests/test_packaging_user_project.py)."""

import PIL.Image

from orsgen.runtime.adapter import Content, ImageLike
from orsgen.runtime.images import PillowImageModule

opener: PillowImageModule = PIL.Image
an_image: ImageLike = PIL.Image.new("RGB", (4, 3))


def as_pillow(out: Content) -> list[PIL.Image.Image]:
    found: list[PIL.Image.Image] = []
    for part in [] if isinstance(out, str) else out:
        if part["type"] == "image" and isinstance(part["image"], PIL.Image.Image):
            found.append(part["image"].convert("L"))
    return found

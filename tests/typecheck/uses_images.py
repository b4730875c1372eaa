"""A user's code that reads the images in a generated adapter's output, with no import of
Pillow: it must type-check with and without Pillow installed
(tests/test_packaging_user_project.py)."""

from generated.echo import EchoEnv
from orsgen.runtime.adapter import Content, ImageLike


def sizes(out: Content) -> list[tuple[int, int]]:
    if isinstance(out, str):
        return []
    return [part["image"].size for part in out if part["type"] == "image"]


def images(out: Content) -> list[ImageLike]:
    return [
        part["image"] for part in ([] if isinstance(out, str) else out) if part["type"] == "image"
    ]


def describe(env: EchoEnv) -> list[str]:
    shown = [f"{i.width}x{i.height} {i.mode} {i.format}" for i in images(env.echo(text="a"))]
    return shown + [f"{w}x{h}" for w, h in sizes(env.reset())]

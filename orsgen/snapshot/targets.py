"""What a TARGET string means: a catalog name, a URL, a local Python file or a stored snapshot."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse

from orsgen.snapshot.errors import TargetError

Kind = Literal["catalog", "url", "file", "snapshot"]
_CATALOG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
# `localhost:8080`, `127.0.0.1:8080/`: a server address without its scheme.
_HOST_PORT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*:[0-9]+/?$")


def _check_root(text: str, path: str) -> None:
    """A server's environment is chosen by name, not by a path (which the SDK would refuse)."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        return
    root = text[: text.index(path)] if path else text
    which = f" and `--env-name {parts[0]}`" if len(parts) == 1 else ""
    raise TargetError(
        f"{text!r} has a path ({path!r}); give the server's root URL {root!r}{which}: "
        "an environment is chosen by name, not by a path"
    )


@dataclass(frozen=True)
class Target:
    kind: Kind
    value: str


def classify(text: str) -> Target:
    if "://" in text:
        parsed = urlparse(text)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise TargetError(f"{text!r} is not an http(s) URL")
        _check_root(text, parsed.path)
        return Target("url", text.rstrip("/"))
    if text.endswith(".json"):
        return Target("snapshot", text)
    if text.endswith(".py") or Path(text).is_file():
        return Target("file", text)
    if (Path(text) / "snapshot.json").is_file():  # `orsgen DIR`, as in `orsgen check DIR`
        stored = (Path(text) / "snapshot.json").as_posix()
        raise TargetError(
            f"{text} is a generated package, not a target; "
            f"to regenerate it offline: `orsgen {stored} -o {text}`"
        )
    if _HOST_PORT.match(text):
        raise TargetError(f"{text!r} is not a URL; did you mean http://{text}?")
    if _CATALOG.match(text):
        return Target("catalog", text)
    raise TargetError(
        f"{text!r} is not a catalog name (namespace/name), an http(s) URL, a Python file or a snapshot.json"
    )

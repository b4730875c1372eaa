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


@dataclass(frozen=True)
class Target:
    kind: Kind
    value: str


def classify(text: str) -> Target:
    if "://" in text:
        parsed = urlparse(text)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise TargetError(f"{text!r} is not an http(s) URL")
        return Target("url", text.rstrip("/"))
    if text.endswith(".json"):
        return Target("snapshot", text)
    if text.endswith(".py") or Path(text).is_file():
        return Target("file", text)
    if _CATALOG.match(text):
        return Target("catalog", text)
    raise TargetError(
        f"{text!r} is not a catalog name (namespace/name), an http(s) URL, a Python file or a snapshot.json"
    )

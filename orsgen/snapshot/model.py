"""The snapshot file: canonical, sorted JSON (``format``, ``environment``, ``package``) with
a ``sha256`` over the environment facts. Secrets never enter it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

# One definition, shared with the runtime drift guard (which must not import the generator).
from orsgen.canonical import canonical_json as canonical_json
from orsgen.canonical import sha256_of as sha256_of
from orsgen.canonical import tools_sha256 as tools_sha256
from orsgen.jsonobject import is_object
from orsgen.snapshot.errors import SnapshotError as SnapshotError
from orsgen.snapshot.stored import (
    Environment,
    Package,
    Snapshot,
    parse,
    parse_environment,
    parse_package,
    stored_form,
)

FORMAT: Literal[1] = 1


def build(
    environment: Environment | Mapping[str, Any], package: Package | Mapping[str, Any]
) -> Snapshot:
    """The snapshot of ``environment`` generated as ``package``, hashed; either may be JSON."""
    if not isinstance(environment, Environment):
        environment = parse_environment(environment)
    if not isinstance(package, Package):
        package = parse_package(package)
    return Snapshot(
        format=FORMAT,
        sha256=sha256_of(stored_form(environment)),
        environment=environment,
        package=package,
    )


def dump(snapshot: Snapshot) -> str:
    return canonical_json(stored_form(snapshot))


def load_text(text: str, where: str) -> Snapshot:
    """A ``snapshot.json``'s text, checked (format, hash, every field) and typed."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"{where} is not valid JSON: {exc}") from None
    if not is_object(data) or data.get("format") != FORMAT:
        raise SnapshotError(f"{where} is not an orsgen snapshot (format {FORMAT})")
    for key in ("environment", "package", "sha256"):
        if key not in data:
            raise SnapshotError(f"{where} lacks the {key!r} field")
    if sha256_of(data["environment"]) != data["sha256"]:
        raise SnapshotError(
            f"{where}: sha256 does not match its contents; it was edited by hand. "
            "Take a fresh snapshot with `orsgen TARGET -o DIR`."
        )
    return parse(data, where)

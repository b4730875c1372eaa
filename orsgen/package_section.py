"""The snapshot's ``package`` section: how to generate (names, options) and the version.

Each name comes from the first source that sets it: the caller, the config file, the
package already in the output directory, then a default derived from the environment.
The version starts at 1.0.0 and is bumped by how the environment changed since the
snapshot already in the output directory (``orsgen.versioning``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orsgen.generate import naming
from orsgen.jsonobject import as_array, as_object
from orsgen.versioning import Classification, bump, classify

FIRST_VERSION = "1.0.0"


@dataclass(frozen=True)
class Names:
    """Names the caller asked for; ``None`` leaves each to the config file or a default."""

    package: str | None = None
    class_name: str | None = None
    split: str | None = None


@dataclass(frozen=True)
class Section:
    package: dict[str, Any]
    # How the environment changed since the previous snapshot; None for the first one.
    changes: Classification | None


def _label(environment: Mapping[str, Any], output: Path) -> str:
    """What the adapter class is named after: the deployment, the class, the environment."""
    ident = as_object(environment.get("identity"))
    label = ident.get("deployment") or ident.get("class_name") or ident.get("env_name")
    return str(label or output.name)


def _names(
    environment: Mapping[str, Any],
    output: Path,
    asked: Names,
    configured: Mapping[str, Any],
    previous: Mapping[str, Any],
) -> dict[str, Any]:
    probe = as_object(environment.get("task_tools_probe"))
    return {
        "name": asked.package
        or configured.get("package")
        or previous.get("name")
        or naming.package_name(output.resolve().name),
        "class_name": asked.class_name
        or configured.get("class_name")
        or previous.get("class_name")
        or naming.class_name(_label(environment, output)),
        "split": asked.split
        or configured.get("split")
        or previous.get("split")
        or probe.get("split")
        or "train",
    }


def _history(previous: Mapping[str, Any], changes: Classification | None) -> tuple[str, list[Any]]:
    """The new version and the history, newest first."""
    if changes is None:
        return FIRST_VERSION, [
            {"version": FIRST_VERSION, "level": "initial", "changes": ["first snapshot"]}
        ]
    history = list(as_array(previous.get("history")))
    version = bump(str(previous.get("version", FIRST_VERSION)), changes.level)
    if changes.level == "unchanged":
        return version, history
    entry = {
        "version": version,
        "level": changes.level,
        "changes": [c.line() for c in sorted(changes.changes)],
    }
    return version, [entry, *history]


def package_section(
    environment: Mapping[str, Any],
    output: Path,
    asked: Names,
    configured: Mapping[str, Any],
    old: Mapping[str, Any] | None,
) -> Section:
    """The ``package`` section for ``environment`` written to ``output``. ``configured`` is
    what the config file sets (``orsgen.config.for_environment``); ``old`` the snapshot
    already in the output directory, if any."""
    previous = as_object(old["package"] if old else None)
    package = _names(environment, output, asked, configured, previous)
    for key in ("include", "exclude", "rename"):
        if key in configured:
            package[key] = configured[key]
        elif key in previous and not configured:
            package[key] = previous[key]
    changes = classify(old["environment"], environment) if old else None
    package["version"], package["history"] = _history(previous, changes)
    return Section(package, changes)

"""The snapshot's ``package`` section: how to generate (names, options) and the version.

Each name: the caller, else the config file, else the existing package, else a default.
``include``/``exclude``/``rename`` come whole from the config table when there is one (an
unset key is back to its default), else from the recorded snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orsgen.generate.pipeline.config import PackageConfig
from orsgen.generate import naming
from orsgen.generate.tools import tool_specs
from orsgen.snapshot.stored import Environment, HistoryEntry, Package, Renames, Snapshot
from orsgen.generate.pipeline.versioning import Change, Classification, bump, classify

FIRST_VERSION = "1.0.0"
# The package fields a config table sets; recorded so that ``orsgen check`` regenerates them.
SELECTION = ("include", "exclude", "rename")


@dataclass(frozen=True)
class Names:
    package: str | None = None
    class_name: str | None = None
    split: str | None = None


@dataclass(frozen=True)
class Section:
    package: Package
    # How the package's surface changed since the previous snapshot; None for the first one.
    changes: Classification | None


def _label(environment: Environment, output: Path) -> str:
    ident = environment.identity
    return ident.deployment or ident.class_name or ident.env_name or output.name


def _names(
    environment: Environment,
    output: Path,
    asked: Names,
    configured: PackageConfig,
    previous: Package | None,
) -> dict[str, str]:
    probe = environment.task_tools_probe
    return {
        "name": asked.package
        or configured.package
        or (previous.name if previous else None)
        or naming.package_name(output.resolve().name),
        "class_name": asked.class_name
        or configured.class_name
        or (previous.class_name if previous else None)
        or naming.class_name(_label(environment, output)),
        "split": asked.split
        or configured.split
        or (previous.split if previous else None)
        or (probe.split if probe else None)
        or "train",
    }


def _selection(configured: PackageConfig | None, previous: Package | None) -> dict[str, Any]:
    """``include``/``exclude``/``rename`` as the package records them (only what is set)."""
    if configured is None:
        if previous is None:
            return {}
        return {k: getattr(previous, k) for k in SELECTION if k in previous.model_fields_set}
    renames = configured.rename
    selected = {
        "include": None if configured.include is None else sorted(configured.include),
        "exclude": sorted(configured.exclude) or None,
        "rename": (
            Renames(tools=renames.tools, params=renames.params)
            if renames.tools or renames.params
            else None
        ),
    }
    return {k: v for k, v in selected.items() if v is not None}


def surface(environment: Environment, package: Package) -> Environment:
    kept = {s.name for s in tool_specs(environment, package)}
    return environment.model_copy(
        update={
            "tools": [t for t in environment.tools if t.name in kept],
            "task_tools": [t for t in environment.task_tools if t.name in kept],
        }
    )


def _renamed(old: Renames, new: Renames, tools: set[str]) -> list[Change]:
    # As breaking as removing a tool or parameter and adding another: the model calls it anew.
    out: list[Change] = []
    for wire in sorted(tools & (set(old.tools) | set(new.tools))):
        before, after = old.tools.get(wire, wire), new.tools.get(wire, wire)
        if before != after:
            out.append(Change(wire, "major", f"tool {wire!r} renamed: {before!r} -> {after!r}"))
    for wire in sorted(tools & (set(old.params) | set(new.params))):
        was, now = old.params.get(wire, {}), new.params.get(wire, {})
        for param in sorted(set(was) | set(now)):
            before, after = was.get(param, param), now.get(param, param)
            if before != after:
                where = f"parameter {param!r} of tool {wire!r}"
                out.append(Change(wire, "major", f"{where} renamed: {before!r} -> {after!r}"))
    return out


def _changes(old: Snapshot, environment: Environment, package: Package) -> Classification:
    new_surface = surface(environment, package)
    changes = classify(surface(old.environment, old.package), new_surface)
    kept = {t.name for t in new_surface.all_tools}
    changes.changes += _renamed(old.package.rename, package.rename, kept)
    return changes


def _history(
    previous: Package | None, changes: Classification | None
) -> tuple[str, list[HistoryEntry]]:
    if previous is None or changes is None:
        first = HistoryEntry(version=FIRST_VERSION, level="initial", changes=["first snapshot"])
        return FIRST_VERSION, [first]
    version = bump(previous.version, changes.level)
    if changes.level == "unchanged":
        return version, list(previous.history)
    entry = HistoryEntry(
        version=version, level=changes.level, changes=[c.line() for c in sorted(changes.changes)]
    )
    return version, [entry, *previous.history]


def package_section(
    environment: Environment,
    output: Path,
    asked: Names,
    configured: PackageConfig | None,
    old: Snapshot | None,
) -> Section:
    """The ``package`` section for ``environment`` written to ``output`` (``old``: the last)."""
    previous = old.package if old else None
    names = _names(environment, output, asked, configured or PackageConfig(), previous)
    package = Package.model_validate({**names, **_selection(configured, previous)})
    changes = _changes(old, environment, package) if old else None
    version, history = _history(previous, changes)
    package = package.model_copy(update={"version": version, "history": history})
    return Section(package, changes)

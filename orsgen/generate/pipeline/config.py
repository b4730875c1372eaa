"""Project configuration: ``orsgen.toml`` or ``[tool.orsgen]`` in ``pyproject.toml``, one
table per package keyed by its output directory (docs/generating.md, "Configuration")."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orsgen.jsonobject import is_object
from orsgen.snapshot.stored import Renames
from orsgen.wording import did_you_mean


class ConfigError(ValueError):
    """The configuration file is invalid; the message names the file and the key."""


class PackageConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    package: str | None = None
    class_name: str | None = None
    split: str | None = None
    toolset: str | None = None
    include: list[str] | None = None
    exclude: list[str] = Field(default_factory=list)
    rename: Renames = Field(default_factory=Renames)


class FileConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    packages: dict[str, PackageConfig] = Field(default_factory=dict)


def _table(path: Path) -> Mapping[str, Any] | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    nested = data.get("tool", {})
    table = nested.get("orsgen") if is_object(nested) else None
    if path.name == "pyproject.toml":
        return table if is_object(table) else None
    # orsgen.toml may spell its tables as pyproject.toml does ([tool.orsgen.packages...]),
    # so the same example works in either file.
    return table if set(data) == {"tool"} and is_object(table) else data


def find(start: Path, explicit: Path | None = None) -> Path | None:
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"{explicit}: no such config file")
        return explicit
    for directory in [start, *start.parents]:
        candidate = directory / "orsgen.toml"
        if candidate.is_file():
            return candidate
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file() and _table(pyproject) is not None:
            return pyproject
    return None


def _keys_at(loc: tuple[int | str, ...]) -> list[str]:
    """The keys valid beside the last part of ``loc`` (an error's path)."""
    kind: Any = FileConfig
    for part in loc[:-1]:
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            field = kind.model_fields.get(str(part))
            kind = field.annotation if field is not None else None
        else:  # a table keyed by the user's names (packages, params): its values' type
            args = get_args(kind)
            kind = args[-1] if args else None
    return list(kind.model_fields) if isinstance(kind, type) and issubclass(kind, BaseModel) else []


def load(path: Path) -> FileConfig:
    table = _table(path)
    try:
        return FileConfig.model_validate(table or {})
    except ValidationError as exc:
        problems: list[str] = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"])
            if err["type"] == "extra_forbidden":  # a typo, most likely: name the key it missed
                hint = did_you_mean(str(err["loc"][-1]), _keys_at(err["loc"]))
                if not hint and err["loc"] in (("tool",), ("orsgen",)):  # a table one level off
                    hint = '; the tables are [packages."DIR"] (or [tool.orsgen.packages."DIR"])'
                problems.append(f"{key}: unknown key{hint}")
            else:
                problems.append(f"{key}: {err['msg']}")
        raise ConfigError(f"{path}: " + "; ".join(problems)) from None


def for_output(output: Path, explicit: Path | None = None) -> tuple[Path, PackageConfig] | None:
    """The config file and its table for ``output`` (keys are relative to the file)."""
    path = find(Path.cwd(), explicit)
    if path is None:
        return None
    wanted = output.resolve()
    for key, table in load(path).packages.items():
        if (path.parent / key).resolve() == wanted:
            return path, table
    return None


def unknown_tools(table: PackageConfig, tool_names: Iterable[str]) -> list[str]:
    known = set(tool_names)
    problems: list[str] = []
    for key, names in (
        ("include", table.include or []),
        ("exclude", table.exclude),
        ("rename.tools", list(table.rename.tools)),
        ("rename.params", list(table.rename.params)),
    ):
        problems += [
            f"{key}: unknown tool {name!r}{did_you_mean(name, known)}"
            for name in names
            if name not in known
        ]
    return problems

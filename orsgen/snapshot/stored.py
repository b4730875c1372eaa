"""The stored snapshot, typed: every layer that reads a snapshot reads these models.

Format 1 is closed: an unknown key is an error that names it, never a field silently
carried along. A tool's ``input_schema`` stays raw (untrusted) JSON, its keys sorted on the
way in, so a live snapshot generates what the same snapshot read back from its file does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from orsgen.jsonobject import is_array, is_object
from orsgen.snapshot.errors import SnapshotError


class _Stored(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_M = TypeVar("_M", bound=_Stored)


def _sorted_json(value: Any) -> Any:
    if is_object(value):
        return {k: _sorted_json(value[k]) for k in sorted(value)}
    if is_array(value):
        return [_sorted_json(v) for v in value]
    return value


class ToolSpec(_Stored):
    name: str
    description: str = ""
    input_schema: Any = None  # raw JSON Schema (untrusted)
    property_order: list[str] | None = None

    @field_validator("input_schema")
    @classmethod
    def _sorted(cls, value: Any) -> Any:
        return _sorted_json(value)


class Identity(_Stored):
    env_name: str | None = None
    deployment: str | None = None
    class_name: str | None = None
    toolset: str | None = None  # an SDK harness toolset every session binds (``--toolset``)

    @property
    def label(self) -> str:
        return self.deployment or self.env_name or "(unnamed)"


class TargetRef(_Stored):
    kind: str
    value: str


class TerminalTool(_Stored):
    name: str
    arg: str | None = None
    description: str = ""


class Images(_Stored):
    # Whether a probed prompt held an image; None: no probe read a prompt.
    in_prompt: bool | None = None


class Split(_Stored):
    name: str
    type: str | None = None
    num_tasks: int


class TaskToolsProbe(_Stored):
    enabled: bool = True
    split: str | None = None
    indices: list[int] = Field(default_factory=list)
    # The task tools each probed task offered, by task index; absent from older snapshots.
    tools_by_task: dict[str, list[str]] | None = None


class Environment(_Stored):
    identity: Identity = Field(default_factory=Identity)
    images: Images = Field(default_factory=Images)
    target: TargetRef | None = None
    server_version: str | None = None
    sdk_version: str | None = None
    splits: list[Split] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)
    task_tools: list[ToolSpec] = Field(default_factory=list)
    task_tools_probe: TaskToolsProbe | None = None
    terminal_tool: TerminalTool | None = None
    supports_score_group: bool = False
    message_block_types: list[str] = Field(default_factory=list)

    @property
    def all_tools(self) -> list[ToolSpec]:
        return [*self.tools, *self.task_tools]

    @property
    def default_url(self) -> str | None:
        # A file target's URL had a random local port, and a catalog name needs none.
        target = self.target
        return target.value if target is not None and target.kind == "url" else None


class Renames(_Stored):
    tools: dict[str, str] = Field(default_factory=dict)
    params: dict[str, dict[str, str]] = Field(default_factory=dict)


class HistoryEntry(_Stored):
    version: str
    level: str = ""
    changes: list[str] = Field(default_factory=list)


class Package(_Stored):
    name: str
    class_name: str
    version: str = "1.0.0"
    split: str = "train"
    include: list[str] | None = None
    exclude: list[str] = Field(default_factory=list)
    rename: Renames = Field(default_factory=Renames)
    history: list[HistoryEntry] = Field(default_factory=list)


class Snapshot(_Stored):
    format: Literal[1]
    sha256: str
    environment: Environment
    package: Package


def stored_form(model: BaseModel) -> dict[str, Any]:
    """A model as JSON data with exactly the keys it was given: a file dumps back to itself."""
    return model.model_dump(mode="json", exclude_unset=True)


def _problem(error: Mapping[str, Any]) -> str:
    loc = [str(p) for p in error["loc"]]
    if error["type"] == "extra_forbidden":
        parent = "/".join(loc[:-1]) or "the top level"
        return (
            f"unknown key {loc[-1]!r} in {parent} (format 1 has no such field; "
            "was it written by a newer orsgen, or edited by hand?)"
        )
    return f"field {'/'.join(loc) or '(top level)'}: {error['msg']}"


def _validated(cls: type[_M], data: Mapping[str, Any], where: str, section: str = "") -> _M:
    try:
        return cls.model_validate(dict(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        if section:
            first = {**first, "loc": (section, *first["loc"])}
        raise SnapshotError(
            f"{where}: {_problem(first)} ({exc.error_count()} problem(s)); "
            "take a fresh snapshot with `orsgen TARGET -o DIR`"
        ) from None


def parse(data: Mapping[str, Any], where: str = "snapshot") -> Snapshot:
    return _validated(Snapshot, data, where)


def parse_environment(data: Mapping[str, Any], where: str = "snapshot") -> Environment:
    return _validated(Environment, data, where, "environment")


def parse_package(data: Mapping[str, Any], where: str = "snapshot") -> Package:
    return _validated(Package, data, where, "package")

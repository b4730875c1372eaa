"""The stored snapshot, typed: validated once when the generator reads it, so every
layer after that reads fields (mypy checks them) instead of ``.get`` chains.

The raw mapping stays the source of truth for what is written and hashed: these models
read it, they never re-serialise it. Unknown keys are kept (``extra="allow"``), so a
newer snapshot still loads. A tool's ``input_schema`` stays raw JSON: it is untrusted,
and the generator normalises it separately, reporting each problem by pointer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orsgen.snapshot.model import SnapshotError


class _Stored(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class ToolSpec(_Stored):
    name: str
    description: str = ""
    input_schema: Any = None  # raw JSON Schema (untrusted)
    property_order: list[str] | None = None


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


class Images(_Stored):
    # Whether a probed prompt held an image; None: no probe read a prompt.
    in_prompt: bool | None = None


class Environment(_Stored):
    identity: Identity = Field(default_factory=Identity)
    images: Images = Field(default_factory=Images)
    target: TargetRef | None = None
    tools: list[ToolSpec] = Field(default_factory=list)
    task_tools: list[ToolSpec] = Field(default_factory=list)
    terminal_tool: TerminalTool | None = None
    supports_score_group: bool = False


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


def parse(data: Mapping[str, Any], where: str = "snapshot") -> Snapshot:
    """The typed view of a stored snapshot; :class:`SnapshotError` names the bad field."""
    try:
        return Snapshot.model_validate(dict(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        place = "/".join(str(p) for p in first["loc"]) or "(top level)"
        raise SnapshotError(
            f"{where}: field {place}: {first['msg']} ({exc.error_count()} problem(s)); "
            "take a fresh snapshot with `orsgen TARGET -o DIR`"
        ) from None

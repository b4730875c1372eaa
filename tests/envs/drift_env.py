"""An environment whose tools change with ORSGEN_DRIFT_VARIANT, for the versioning tests.

v1: read(path), write(path, mode: 'a' | 'w')
v2: v1 + read(encoding=...) optional                       -> minor
v3: v2 without write                                       -> major
v4: v3 with a new description on read                      -> patch
v5: v4 with read(path) made int                            -> major
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, Field

from openreward.environments import Environment, TextBlock, ToolOutput, tool

VARIANT = os.environ.get("ORSGEN_DRIFT_VARIANT", "v1")
N = int(VARIANT[1:])

if N >= 5:

    class ReadInput(BaseModel):
        path: int = Field(description="File number.")
        encoding: str = Field(default="utf-8", description="Text encoding.")

elif N >= 2:

    class ReadInput(BaseModel):  # type: ignore[no-redef]
        path: str = Field(description="File path.")
        encoding: str = Field(default="utf-8", description="Text encoding.")

else:

    class ReadInput(BaseModel):  # type: ignore[no-redef]
        path: str = Field(description="File path.")


class WriteInput(BaseModel):
    path: str = Field(description="File path.")
    mode: Literal["a", "w"] = Field(default="w", description="Append or overwrite.")


READ_DOC = "Read a file." if N < 4 else "Read a file and return its text."


class DriftEnv(Environment):
    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [{"id": 0}, {"id": 1}]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text="Read the file.")]

    @tool
    def read(self, params: ReadInput) -> ToolOutput:
        return ToolOutput(blocks=[TextBlock(text=f"read {params.path}")], reward=None)

    read.__doc__ = READ_DOC

    if N < 3:

        @tool
        def write(self, params: WriteInput) -> ToolOutput:
            """Write a file."""
            return ToolOutput(blocks=[TextBlock(text="ok")], reward=None)

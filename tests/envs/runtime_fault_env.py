"""An ORS environment whose tools misbehave on purpose, for the runtime's fault tests.

Served as ``faultenv``. Every tool is real server code run by the openreward framework:
``ok`` answers (reward 1.0), ``slow`` sleeps, ``boom`` raises, ``die`` kills its own
server process mid-call. ``setup()`` can be slowed per task with ``setup_delay``.
"""

from __future__ import annotations

import asyncio
import os

from pydantic import BaseModel, Field

from openreward.environments import Environment, TextBlock, ToolOutput, tool


class OkInput(BaseModel):
    text: str = Field(default="", description="Anything.")


class SlowInput(BaseModel):
    seconds: float = Field(description="How long to sleep.")


class FaultEnv(Environment):
    """Tools that fail in every way the runtime must survive."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [{"name": f"t{i}", "setup_delay": 0.0} for i in range(8)]

    async def setup(self) -> None:
        await asyncio.sleep(float(self.task_spec.get("setup_delay") or 0.0))

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"Fault task {self.task_spec['name']}.")]

    @tool
    async def ok(self, params: OkInput) -> ToolOutput:
        """Answer at once with reward 1.0."""
        return ToolOutput(blocks=[TextBlock(text=f"ok {params.text}")], reward=1.0, finished=False)

    @tool
    async def slow(self, params: SlowInput) -> ToolOutput:
        """Sleep, then answer."""
        await asyncio.sleep(params.seconds)
        return ToolOutput(blocks=[TextBlock(text="slept")], reward=0.5, finished=False)

    @tool
    async def boom(self, params: OkInput) -> ToolOutput:
        """Raise on the server."""
        raise RuntimeError("boom: the tool blew up on purpose")

    @tool
    async def die(self, params: OkInput) -> ToolOutput:
        """Kill this server process in the middle of the call."""
        await asyncio.sleep(0.2)
        os._exit(17)

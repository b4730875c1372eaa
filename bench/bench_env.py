"""The benchmark's local ORS environment: configurable task count, setup delay and
tool latency (read from the environment, so the server subprocess inherits them).

Served as ``benchenv``. ``setup()`` and ``act`` await, as sandbox environments do
(they wait on remote machines), so concurrent sessions overlap on the server.

    BENCH_TASKS=500 BENCH_SETUP_DELAY=0.5 BENCH_TOOL_LATENCY=0.0
"""

from __future__ import annotations

import asyncio
import os

from pydantic import BaseModel, Field

from openreward.environments import Environment, TextBlock, ToolOutput, tool

TASKS = int(os.environ.get("BENCH_TASKS", "500"))
SETUP_DELAY = float(os.environ.get("BENCH_SETUP_DELAY", "0.5"))
TOOL_LATENCY = float(os.environ.get("BENCH_TOOL_LATENCY", "0.0"))


class ActInput(BaseModel):
    text: str = Field(description="The answer to submit.")


class BenchEnv(Environment):
    """Answer with the target word."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [{"target": f"w{i}", "level": i % 3} for i in range(TASKS)]

    async def setup(self) -> None:
        if SETUP_DELAY > 0:
            await asyncio.sleep(SETUP_DELAY)

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"Call act with {self.task_spec['target']!r}.")]

    @tool
    async def act(self, params: ActInput) -> ToolOutput:
        """Submit an answer; reward 1.0 when it is the target."""
        if TOOL_LATENCY > 0:
            await asyncio.sleep(TOOL_LATENCY)
        right = params.text == self.task_spec["target"]
        return ToolOutput(
            blocks=[TextBlock(text=f"got {params.text}")],
            reward=1.0 if right else 0.0,
            finished=right,
        )

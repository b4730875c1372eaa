"""An ORS environment with a stand-in ``sandbox`` that runs commands in a temporary
directory, so an SDK harness toolset (``--toolset claude-code``) can bind to it.

Its own ``bash`` tool is shadowed by the toolset's, and ``submit`` stays its own.
"""

from __future__ import annotations

import asyncio
import tempfile

from pydantic import BaseModel, Field

from openreward.environments import Environment, TextBlock, ToolOutput, tool


class LocalSandbox:
    """What the toolsets call on ``env.sandbox``: ``run(cmd) -> (output, exit code)``."""

    def __init__(self) -> None:
        self.root = tempfile.mkdtemp(prefix="ors-sandbox-")

    async def run(self, command: str, timeout: float | None = None, **_: object) -> tuple[str, int]:
        proc = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            command,
            cwd=self.root,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _err = await asyncio.wait_for(proc.communicate(), timeout or 30)
        return out.decode(errors="replace"), int(proc.returncode or 0)

    async def download(self, path: str) -> bytes:
        with open(path, "rb") as fh:
            return fh.read()

    async def check_run(self, command: str, **kw: object) -> str:
        out, code = await self.run(command)
        if code:
            raise RuntimeError(out)
        return out


class OwnBash(BaseModel):
    script: str = Field(description="A script (the environment's own bash tool).")


class Submit(BaseModel):
    answer: str = Field(description="The final answer.")


class SandboxEnv(Environment):
    """Work in a sandbox, then submit."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.sandbox = LocalSandbox()

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [{"goal": "write hello"}]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text="Create hello.txt containing hello.")]

    @tool
    def bash(self, params: OwnBash) -> ToolOutput:
        """The environment's own bash (shadowed by a bound toolset)."""
        return ToolOutput(blocks=[TextBlock(text="own bash")], reward=0.0, finished=False)

    @tool
    def submit(self, params: Submit) -> ToolOutput:
        """Submit the answer."""
        return ToolOutput(blocks=[TextBlock(text="ok")], reward=1.0, finished=True)

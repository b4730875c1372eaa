"""Prompts as the model sees them, for ``orsgen serve RUN`` (issue 45 item 6): task 0's is a
text of 9,646 characters (past results.jsonl's 8,000), task 1's a content list (a text, an
image, a text). ``say`` ends the episode with reward 1.0."""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import BaseModel, Field

from openreward.environments import Environment, ImageBlock, TextBlock, ToolOutput, tool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vision_env import PROMPT_IMAGE  # noqa: E402

LONG = ("Say 'fig'. " + "".join(f"line {i:05d} of the long prompt.\n" for i in range(400)))[:9646]


class SayInput(BaseModel):
    text: str = Field(description="The word to say.")


class PromptEnv(Environment):
    """Say the word."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["test"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [{"kind": "long"}, {"kind": "list"}]

    def get_prompt(self) -> list[TextBlock | ImageBlock]:
        if self.task_spec["kind"] == "long":
            return [TextBlock(text=LONG)]
        image = ImageBlock(data=PROMPT_IMAGE, mimeType="image/png")
        return [TextBlock(text="Look at this."), image, TextBlock(text="Say 'fig'.")]

    @tool
    def say(self, params: SayInput) -> ToolOutput:
        """Say a word."""
        return ToolOutput(
            blocks=[TextBlock(text=f"said: {params.text}")], reward=1.0, finished=True
        )

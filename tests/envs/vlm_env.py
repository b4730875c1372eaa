"""A vision task for the CPU vision-language GRPO test: the prompt carries a 64x48 PNG,
``show`` answers with text and a 32x32 PNG, and the final plain-text answer is graded by
a @terminal tool (so a rollout is scored even when a random model calls no tool)."""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import BaseModel, Field

from openreward.environments import Environment, ImageBlock, TextBlock, ToolOutput, terminal, tool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vision_env import IMAGES, PROMPT_IMAGE  # noqa: E402


class Look(BaseModel):
    zoom: int = Field(default=1, description="Zoom level.")


class Answer(BaseModel):
    answer: str = Field(description="The colour.")


class VlmEnv(Environment):
    """Name the colour of the image."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [{"colour": "red"}, {"colour": "red"}]

    def get_prompt(self) -> list[TextBlock | ImageBlock]:
        return [TextBlock(text="Colour?"), ImageBlock(data=PROMPT_IMAGE, mimeType="image/png")]

    @tool
    def look(self, params: Look) -> ToolOutput:
        """Look again."""
        mime, data = IMAGES["png"]
        return ToolOutput(blocks=[TextBlock(text="here"), ImageBlock(data=data, mimeType=mime)])

    @terminal
    @tool
    def submit(self, params: Answer) -> ToolOutput:
        """Grade the answer."""
        right = "red" in params.answer.lower()
        return ToolOutput(
            blocks=[TextBlock(text="graded")], reward=1.0 if right else 0.0, finished=True
        )

"""The echo environment after a change the committed ``generated/echo`` adapter does not know:
``echo`` gained a required parameter, ``hint`` is gone and ``shout`` is new.

Served as ``echoenv`` (same name as examples/echo_env.py), for the runtime drift guard tests.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from openreward.environments import Environment, TextBlock, ToolOutput, tool


class EchoInput(BaseModel):
    text: str = Field(description="The word to echo back.")
    lang: str = Field(description="Language of the word.")


class ShoutInput(BaseModel):
    text: str = Field(description="The word to shout.")


class EchoEnv(Environment):
    """Echo the target word to score (changed tools)."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train", "test"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [{"target": "apple"}, {"target": "banana"}]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"Call echo with the word {self.task_spec['target']!r}.")]

    @tool
    def echo(self, params: EchoInput) -> ToolOutput:
        """Echo a word back; scores 1.0 when it is the target word."""
        right = params.text == self.task_spec["target"]
        return ToolOutput(
            blocks=[TextBlock(text=f"echo: {params.text}")], reward=1.0 if right else 0.0
        )

    @tool
    def shout(self, params: ShoutInput) -> ToolOutput:
        """Shout a word."""
        return ToolOutput(blocks=[TextBlock(text=params.text.upper())], reward=None)

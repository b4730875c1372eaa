"""Two environments on one server, with different tools, tasks and prompts, so a test
can tell which one an adapter really talks to."""

from __future__ import annotations

from pydantic import BaseModel, Field

from openreward.environments import Environment, TextBlock, ToolOutput, tool


class FirstInput(BaseModel):
    text: str = Field(description="Text for the first environment.")


class SecondInput(BaseModel):
    word: str = Field(description="Word for the second environment.")


class First(Environment):
    """The first environment (the server's default)."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [{"goal": "first-0"}, {"goal": "first-1"}]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"FIRST prompt for {self.task_spec['goal']}")]

    @tool
    def first_tool(self, params: FirstInput) -> ToolOutput:
        """Only the first environment has this tool."""
        return ToolOutput(blocks=[TextBlock(text=f"first got {params.text}")], reward=0.25)


class Second(Environment):
    """The second environment."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [
            {"word": "second-0", "color": "red"},
            {"word": "second-1", "color": "green"},
            {"word": "second-2", "color": "blue"},
        ]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"SECOND prompt for {self.task_spec['word']}")]

    @tool
    def second_tool(self, params: SecondInput) -> ToolOutput:
        """Only the second environment has this tool."""
        right = params.word == self.task_spec["word"]
        return ToolOutput(
            blocks=[TextBlock(text=f"second got {params.word}")],
            reward=1.0 if right else -1.0,
            finished=right,
        )

"""An environment graded through a @terminal tool: the model answers in plain text."""

from __future__ import annotations

from pydantic import BaseModel, Field

from openreward.environments import Environment, TextBlock, ToolOutput, terminal, tool


class Answer(BaseModel):
    answer: str = Field(description="The final answer.")


class Note(BaseModel):
    text: str


class QuizEnv(Environment):
    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [{"question": "6 x 7", "answer": "42"}, {"question": "2 + 2", "answer": "4"}]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"What is {self.task_spec['question']}? Answer in plain text.")]

    @tool
    def scratch(self, params: Note) -> ToolOutput:
        """Write a note (unscored)."""
        return ToolOutput(blocks=[TextBlock(text="noted")])

    @terminal
    @tool
    def submit(self, params: Answer) -> ToolOutput:
        """Grade the final answer."""
        right = params.answer.strip() == self.task_spec["answer"]
        return ToolOutput(
            blocks=[TextBlock(text="graded")], reward=1.0 if right else 0.0, finished=True
        )

"""Environments whose splits are not the usual ``train``, for the split defaults.

- ``onlytest``: one split, ``test`` (an evaluation set), one shared tool, and a task tool
  on task 0 so the probe must run on ``test``.
- ``notrain``: two splits, listed ``validation`` then ``test``, neither ``train``.
- ``emptytrain``: a ``train`` split with no tasks (the default probe has nothing to open).
"""

from __future__ import annotations

from abc import abstractmethod

from pydantic import BaseModel

from openreward.environments import (
    Environment,
    ListToolsOutput,
    TextBlock,
    ToolOutput,
    ToolSpec,
    tool,
)


class AnswerInput(BaseModel):
    text: str


class _Base(Environment):
    SPLITS: dict[str, list[dict[str, str]]] = {}

    @abstractmethod
    def _concrete(self) -> None:
        """Only the subclasses below are environments to serve."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return list(cls.SPLITS)

    @classmethod
    def list_tasks(cls, split: str) -> list[dict[str, str]]:
        return cls.SPLITS[split]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"Answer {self.task_spec['q']!r}.")]

    @tool
    def answer(self, params: AnswerInput) -> ToolOutput:
        """Answer the question."""
        right = params.text == self.task_spec.get("a")
        return ToolOutput(blocks=[TextBlock(text="ok")], reward=float(right), finished=True)


class OnlyTest(_Base):
    def _concrete(self) -> None:
        pass

    SPLITS = {"test": [{"q": "2+2", "a": "4", "hint": "even"}, {"q": "3+3", "a": "6"}]}

    @tool(shared=False)
    def hint(self, params: AnswerInput) -> ToolOutput:
        """A hint, on tasks that have one."""
        return ToolOutput(blocks=[TextBlock(text=str(self.task_spec.get("hint")))])

    def list_task_tools(self) -> ListToolsOutput:
        if not self.task_spec.get("hint"):
            return ListToolsOutput(tools=[])
        schema = AnswerInput.model_json_schema()
        return ListToolsOutput(
            tools=[ToolSpec(name="hint", description="A hint.", input_schema=schema)]
        )


class NoTrain(_Base):
    def _concrete(self) -> None:
        pass

    SPLITS = {"validation": [{"q": "1+1", "a": "2"}], "test": [{"q": "2+2", "a": "4"}]}


class EmptyTrain(_Base):
    def _concrete(self) -> None:
        pass

    SPLITS = {"train": []}

"""A test environment for orsgen's bridge tests (not an example).

- Task specs carry keys named ``prompt`` and ``task_index`` with values unlike the
  reserved dataset columns, so a test can tell a metadata value from a reserved one,
  and an ``answer`` key whose values mix ints and strings across tasks.
- ``answer`` scores 1.0 and finishes on the task's target word, 0.0 otherwise.
- ``score`` returns exactly the reward it is given (``None`` for unscored), so a test
  can produce unscored, zero and negative rewards on demand.
- ``explode`` always raises inside the environment: a failed call.
- Task tools: ``only_two`` is offered by task 2 alone; ``shifty`` is offered by tasks
  0 and 1 with a different input schema on each.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from openreward.environments import (
    Environment,
    ListToolsOutput,
    TextBlock,
    ToolOutput,
    ToolSpec,
    tool,
)

TARGETS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
TASKS: list[dict[str, Any]] = [
    {
        "target": word,
        "level": i % 3,
        # Mixed value types across tasks (int, then str): Arrow cannot hold them in one type.
        "answer": i if i % 2 == 0 else word,
        # Collide with the reserved dataset columns on purpose.
        "prompt": f"spec-prompt-{word}",
        "task_index": 1000 + i,
    }
    for i, word in enumerate(TARGETS)
]


class AnswerInput(BaseModel):
    text: str = Field(description="The answer word.")


class ScoreInput(BaseModel):
    value: float | None = Field(default=None, description="Reward to return; null for none.")


class Empty(BaseModel):
    pass


class ShiftyInput(BaseModel):
    n: Any = Field(default=None, description="Anything.")


class RulesEnv(Environment):
    """Answer with the target word."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train", "test"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return TASKS if split == "train" else TASKS[:2]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"Answer with the word {self.task_spec['target']!r}.")]

    @tool
    def answer(self, params: AnswerInput) -> ToolOutput:
        """Answer; 1.0 and finished when right."""
        right = params.text == self.task_spec["target"]
        return ToolOutput(
            blocks=[TextBlock(text="right" if right else f"wrong: {params.text}")],
            reward=1.0 if right else 0.0,
            finished=right,
            metadata={"right": right, "target": self.task_spec["target"]},
        )

    @tool
    def score(self, params: ScoreInput) -> ToolOutput:
        """Return the given reward."""
        return ToolOutput(blocks=[TextBlock(text=f"scored {params.value}")], reward=params.value)

    @tool
    def explode(self, params: Empty) -> ToolOutput:
        """Always fails inside the environment."""
        raise RuntimeError("boom from the environment")

    @tool(shared=False)
    def only_two(self, params: Empty) -> ToolOutput:
        """A tool that only task 2 offers."""
        return ToolOutput(blocks=[TextBlock(text="two only")])

    @tool(shared=False)
    def shifty(self, params: ShiftyInput) -> ToolOutput:
        """A tool whose advertised schema differs between tasks 0 and 1."""
        return ToolOutput(blocks=[TextBlock(text=f"shifty {params.n!r}")])

    def list_task_tools(self) -> ListToolsOutput:
        index = TARGETS.index(self.task_spec["target"])
        specs: list[ToolSpec] = []
        if index == 2:
            specs.append(
                ToolSpec(
                    name="only_two",
                    description="A tool that only task 2 offers.",
                    input_schema={"type": "object", "properties": {}},
                )
            )
        if index in (0, 1):
            kind = "integer" if index == 0 else "string"
            specs.append(
                ToolSpec(
                    name="shifty",
                    description="A tool whose advertised schema differs between tasks 0 and 1.",
                    input_schema={
                        "type": "object",
                        "properties": {"n": {"type": kind, "description": "A value."}},
                        "required": ["n"],
                    },
                )
            )
        return ListToolsOutput(tools=specs)

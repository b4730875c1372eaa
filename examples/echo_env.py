"""A tiny ORS environment for the orsgen demo and tests.

Each task asks the model to echo a target word; the test split's words are held out (none
is a train task's word). ``echo`` is a shared tool: it returns reward 1.0 and ends the
episode on a match, 0.0 otherwise. ``hint`` is a task-specific tool that only tasks with a
hint offer (ORS ``/task_tools``).

Serve it:  python examples/echo_env.py --port 8080
Generate:  orsgen examples/echo_env.py -o generated/echo
"""

from __future__ import annotations

import argparse
from typing import Literal

from pydantic import BaseModel, Field

from openreward.environments import (
    Environment,
    ListToolsOutput,
    Server,
    TextBlock,
    ToolOutput,
    ToolSpec,
    tool,
)

TASKS = [
    {"target": "apple", "difficulty": "easy", "hint": "a red fruit"},
    {"target": "banana", "difficulty": "easy", "hint": None},
    {"target": "cherry", "difficulty": "medium", "hint": "a small stone fruit"},
    {"target": "damson", "difficulty": "hard", "hint": None},
]
# Held out: words no train task asks for, so an evaluation on the test split measures tasks
# the model never trained on.
TEST_TASKS = [
    {"target": "fig", "difficulty": "easy", "hint": "a soft fruit full of seeds"},
    {"target": "grape", "difficulty": "easy", "hint": None},
    {"target": "lemon", "difficulty": "medium", "hint": "a sour yellow fruit"},
    {"target": "mango", "difficulty": "hard", "hint": None},
]


class EchoInput(BaseModel):
    text: str = Field(description="The word to echo back.")
    style: Literal["plain", "loud"] = Field(default="plain", description="How to echo it.")


class HintInput(BaseModel):
    level: int = Field(default=1, description="How much to reveal, 1 to 3.")


class EchoEnv(Environment):
    """Echo the target word to score."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train", "test"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return TASKS if split == "train" else TEST_TASKS

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"Call echo with the word {self.task_spec['target']!r}.")]

    @tool
    def echo(self, params: EchoInput) -> ToolOutput:
        """Echo a word back; scores 1.0 when it is the target word."""
        right = params.text.strip().lower() == str(self.task_spec["target"]).lower()
        text = params.text.upper() if params.style == "loud" else params.text
        return ToolOutput(
            blocks=[TextBlock(text=f"echo: {text}")],
            reward=1.0 if right else 0.0,
            finished=right,
            metadata={"match": right},
        )

    @tool(shared=False)
    def hint(self, params: HintInput) -> ToolOutput:
        """Reveal a hint about the target word (only on tasks that have one)."""
        return ToolOutput(blocks=[TextBlock(text=str(self.task_spec.get("hint")))], reward=None)

    def list_task_tools(self) -> ListToolsOutput:
        if not self.task_spec.get("hint"):
            return ListToolsOutput(tools=[])
        spec = ToolSpec(
            name="hint",
            description=(EchoEnv.hint.__doc__ or "").strip(),
            input_schema=HintInput.model_json_schema(),
        )
        return ListToolsOutput(tools=[spec])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    opts = parser.parse_args()
    Server([EchoEnv]).run(host=opts.host, port=opts.port)

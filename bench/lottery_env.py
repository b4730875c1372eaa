"""A lottery: each task wins with a known probability, whatever the model says. For the
evaluation scale bench (bench/eval_scale.py) and ``orsgen eval``'s report and scale tests.
Served as ``lotteryenv``.

Task ``i`` of ``test`` wins with probability ``(i % 10) / 10``. The prompt is
``LOTTERY_PROMPT`` characters long; the one tool, ``draw``, echoes its text back
(``LOTTERY_OUTPUT`` characters) and, on the ``LOTTERY_CALLS``-th call of a session, scores
1.0 on a win and 0.0 otherwise. The episode then stays open, the model's final answer
ending it, unless ``LOTTERY_CALLS`` is 1 and ``LOTTERY_OPEN`` is not set (then the draw
ends it: a rollout of one turn). A rollout of 7 calls is 16 messages: the prompt, 7 calls
with their results, and the answer.

    LOTTERY_TASKS=10000 python tests/serve_env.py bench/lottery_env.py --port 8080
"""

from __future__ import annotations

import os
import random

from pydantic import BaseModel, Field

from openreward.environments import Environment, TextBlock, ToolOutput, tool

TASKS = int(os.environ.get("LOTTERY_TASKS", "60"))
CALLS = int(os.environ.get("LOTTERY_CALLS", "1"))
PROMPT = int(os.environ.get("LOTTERY_PROMPT", "64"))
OUTPUT = int(os.environ.get("LOTTERY_OUTPUT", "64"))
ENDS = CALLS <= 1 and not os.environ.get("LOTTERY_OPEN")  # the draw ends the episode


def chance(task: int) -> float:
    """Task ``task``'s probability of winning."""
    return (task % 10) / 10


class Ticket(BaseModel):
    text: str = Field(description="Anything; the draw ignores it.")


class LotteryEnv(Environment):
    """Draw until the lottery says; a task wins with its own probability."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec
        self.calls = 0

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["test"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [{"task": i} for i in range(TASKS)]

    def get_prompt(self) -> list[TextBlock]:
        head = f"Lottery ticket {self.task_spec['task']}: call draw. "
        return [TextBlock(text=(head + "x" * PROMPT)[: max(PROMPT, len(head))])]

    @tool
    def draw(self, params: Ticket) -> ToolOutput:
        """Draw; the last draw of a session says whether the ticket won."""
        self.calls += 1
        text = (params.text * (OUTPUT // max(1, len(params.text)) + 1))[:OUTPUT]
        if self.calls < CALLS:
            return ToolOutput(blocks=[TextBlock(text=text)], reward=None, finished=False)
        won = random.random() < chance(int(self.task_spec["task"]))
        return ToolOutput(blocks=[TextBlock(text=text)], reward=1.0 if won else 0.0, finished=ENDS)

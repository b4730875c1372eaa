"""An environment whose tasks succeed with known probabilities, for ``orsgen eval``.

Each task names a word and a success probability ``p``. The one tool, ``say``, ends the
episode and scores 1.0 with probability ``p`` (drawn on the server, whatever the model
says), else 0.0: the randomness is on the environment's side, so a greedy model still
gives per-task pass@k near ``1 - (1 - p)^k``. ``train`` and ``test`` hold different
words, so a row that opens the wrong split shows in the prompt. A task with ``delay``
sleeps that long in the tool (for runs stopped halfway); ``p`` of ``-1`` never scores
(reward ``None``, unfinished).
"""

from __future__ import annotations

import asyncio
import random

from pydantic import BaseModel, Field

from openreward.environments import Environment, TextBlock, ToolOutput, tool

TRAIN = [{"word": "apple", "p": 1.0}, {"word": "banana", "p": 0.0}]
TEST = [
    {"word": "cherry", "p": 0.9},
    {"word": "damson", "p": 0.5},
    {"word": "elder", "p": 0.2},
    {"word": "fig", "p": 1.0},
]
SLOW = [{"word": w, "p": 0.5, "delay": 0.4} for w in ("grape", "hazel", "kiwi", "lemon")]
OPEN = [{"word": "mango", "p": -1.0}, {"word": "nutmeg", "p": -1.0}]
SPLITS = {"train": TRAIN, "test": TEST, "slow": SLOW, "open": OPEN}


class SayInput(BaseModel):
    text: str = Field(description="The word to say.")


class ChanceEnv(Environment):
    """Say the word; it counts with the task's probability."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return list(SPLITS)

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return SPLITS[split]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"Say {self.task_spec['word']!r}.")]

    @tool
    async def say(self, params: SayInput) -> ToolOutput:
        """Say a word; it counts with the task's probability."""
        await asyncio.sleep(float(self.task_spec.get("delay", 0.0)))
        p = float(self.task_spec["p"])
        if p < 0:
            return ToolOutput(blocks=[TextBlock(text="heard")], reward=None, finished=False)
        won = random.random() < p
        return ToolOutput(
            blocks=[TextBlock(text=f"said: {params.text}")],
            reward=1.0 if won else 0.0,
            finished=True,
        )

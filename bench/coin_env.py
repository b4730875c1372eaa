"""An ORS environment whose tasks succeed with known probabilities, for the curriculum
benchmark (bench/curriculum.py) and the curriculum's training tests. Served as ``coinenv``.

Twenty tasks in ``train`` (issue 23's bench): 7 always solved (``p`` = 1), 7 never
(``p`` = 0) and 6 solved half the time (``p`` = 0.5). The model answers in plain text;
the ``@terminal`` tool ``answer`` grades it with reward 1.0 with probability ``p`` and 0.0
otherwise, whatever the text. The randomness is the environment's own: each task's draws
come from ``Random(f"{COIN_SEED}:{task}")``, one per graded session in the order the
server grades them, so no model is needed to know which groups can teach.

    COIN_SEED=0 python tests/serve_env.py bench/coin_env.py --port 8080
"""

from __future__ import annotations

import os
import random
import threading

from pydantic import BaseModel, Field

from openreward.environments import Environment, TextBlock, ToolOutput, terminal, tool

SEED = os.environ.get("COIN_SEED", "0")
PASS = [1.0] * 7 + [0.0] * 7 + [0.5] * 6
TASKS = [{"task": i, "p": p} for i, p in enumerate(PASS)]

_lock = threading.Lock()
_draws: dict[int, random.Random] = {}


def draw(task: int) -> float:
    """The next draw of ``task``'s stream, in [0, 1)."""
    with _lock:
        rng = _draws.setdefault(task, random.Random(f"{SEED}:{task}"))
        return rng.random()


class Answer(BaseModel):
    text: str = Field(description="The final answer.")


class Note(BaseModel):
    text: str = Field(description="A note to yourself.")


class CoinEnv(Environment):
    """Answer; the environment decides by its own coin whether the answer passes."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return TASKS

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"Task {self.task_spec['task']}: answer in one word.")]

    @tool
    def note(self, params: Note) -> ToolOutput:
        """Write a note (unscored)."""
        return ToolOutput(blocks=[TextBlock(text="noted")])

    @terminal
    @tool
    def answer(self, params: Answer) -> ToolOutput:
        """Grade the final answer: passes with the task's probability."""
        passed = draw(int(self.task_spec["task"])) < float(self.task_spec["p"])
        return ToolOutput(
            blocks=[TextBlock(text="passed" if passed else "failed")],
            reward=1.0 if passed else 0.0,
            finished=True,
        )

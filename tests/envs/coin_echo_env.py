"""coinenv's tasks (bench/coin_env.py: 7 always pass, 7 never, 6 half the time) behind the
prompt the AsyncGRPO stand-in model answers ("Call echo with the word 't3'."): ``echo``
passes with the task's probability, drawn by the environment, whatever the word. Served
as ``coinechoenv``.

With ``COIN_LEDGER=PATH`` in its environment the server also appends one JSON line per
graded ``echo`` to PATH (``serial``, ``task``, ``reward``) and ends the echo's text with
``#<serial>``: what the server saw, to check a rollout's record against."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import threading
from pathlib import Path

from pydantic import BaseModel, Field

from openreward.environments import Environment, TextBlock, ToolOutput, tool

_spec = importlib.util.spec_from_file_location(
    "coin_env", Path(__file__).resolve().parents[2] / "bench" / "coin_env.py"
)
assert _spec is not None and _spec.loader is not None
coin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coin)

_LEDGER = os.environ.get("COIN_LEDGER")
_serials = itertools.count()
_ledger_lock = threading.Lock()


def _graded(task: int, reward: float) -> str:
    """Record a graded echo in the ledger (when one is set); the text's serial suffix."""
    if _LEDGER is None:
        return ""
    with _ledger_lock:
        serial = next(_serials)
        with open(_LEDGER, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"serial": serial, "task": task, "reward": reward}) + "\n")
    return f" #{serial}"


class EchoInput(BaseModel):
    text: str = Field(description="The word to echo.")


class CoinEchoEnv(Environment):
    """Echo the task's word; the environment's coin decides whether it passes."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return list(coin.TASKS)

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"Call echo with the word 't{self.task_spec['task']}'.")]

    @tool
    def echo(self, params: EchoInput) -> ToolOutput:
        """Echo a word; passes with the task's probability."""
        task = int(self.task_spec["task"])
        reward = 1.0 if coin.draw(task) < float(self.task_spec["p"]) else 0.0
        return ToolOutput(
            blocks=[TextBlock(text=f"echo: {params.text}{_graded(task, reward)}")],
            reward=reward,
            finished=True,
        )

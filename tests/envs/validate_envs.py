"""Environments for ``orsgen validate`` (tests/test_validate.py): each has exactly one defect.

``Clean`` has none: three documented tools (one with an enum, one with no arguments), a task
tool on some tasks, two splits of distinct prompts and rewards in ``[0, 1]``. Every other
environment is ``Clean``'s shape with one change, named by the check that must find it:

- ``TrivialReward``: a ``give_up`` tool (no arguments) earns the full reward;
- ``NondetReward`` / ``NondetOutput``: the same call gives another reward / another output;
- ``SplitOverlap``: test task 1 is train task 2;
- ``DuplicateTasks``: train tasks 1 and 3 ask the same;
- ``TaskIndexIgnored``: every task of a split has the same prompt;
- ``EmptyPrompt``: train task 2's prompt has no text;
- ``NanReward`` / ``NegInfReward`` / ``WideReward``: ``score`` rewards NaN / -Infinity / 2.0;
- ``ServerError``: ``answer`` raises on the empty string (schema-valid);
- ``SessionStateLeak``: ``recall`` reads the draft ``remember`` stored, at module level, so one
  session's draft shows in another's;
- ``Undocumented``: ``answer``'s ``text`` parameter has no description;
- ``FinishedUnscored``: ``answer`` finishes the episode with no reward.

The SDK's server writes a NaN or infinite reward as ``null`` (pydantic's JSON), so this module
wraps the tool result's serialiser to put the JSON literals ``NaN`` and ``-Infinity`` on the
wire, as a server written another way would; no other result changes.
"""

from __future__ import annotations

import json
import math
import random
from abc import abstractmethod
from typing import Any, Literal

from pydantic import BaseModel, Field

from openreward.environments import (
    Environment,
    ListToolsOutput,
    TextBlock,
    ToolOutput,
    ToolSpec,
    tool,
)
from openreward.environments import types as _types


def _literal_non_finite(dump: Any) -> Any:
    def model_dump_json(self: Any, **kwargs: Any) -> str:
        text: str = dump(self, **kwargs)
        reward = getattr(getattr(getattr(self, "root", None), "output", None), "reward", None)
        if isinstance(reward, float) and not math.isfinite(reward):
            literal = "NaN" if math.isnan(reward) else json.dumps(reward)  # -Infinity
            text = text.replace('"reward":null', f'"reward":{literal}', 1)
        return text

    return model_dump_json


if not getattr(_types.RunToolOutput, "_validate_envs_patched", False):
    _types.RunToolOutput.model_dump_json = _literal_non_finite(  # type: ignore[method-assign]
        _types.RunToolOutput.model_dump_json
    )
    _types.RunToolOutput._validate_envs_patched = True  # type: ignore[attr-defined]


class AnswerInput(BaseModel):
    text: str = Field(description="The answer to the task's question.")


class LookupInput(BaseModel):
    topic: Literal["rules", "example"] = Field(description="What to look up.")


class NoInput(BaseModel):
    pass


class UndocumentedInput(BaseModel):
    text: str


def _out(text: str, reward: float | None = 0.0, finished: bool = False) -> ToolOutput:
    return ToolOutput(blocks=[TextBlock(text=text)], reward=reward, finished=finished)


def _tasks(split: str) -> list[dict[str, str]]:
    return [{"q": f"{split} question {i}", "a": f"{split}-answer-{i}"} for i in range(4)]


class _Base(Environment):
    """The clean shape; subclasses change one thing."""

    @abstractmethod
    def _concrete(self) -> None:
        """Only the subclasses below are environments to serve."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train", "test"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict[str, str]]:
        return _tasks(split)

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"Answer {self.task_spec['q']!r}.")]

    def _grade(self, text: str) -> ToolOutput:
        right = text == self.task_spec["a"]
        return _out("right" if right else "wrong", float(right), finished=True)

    @tool
    def answer(self, params: AnswerInput) -> ToolOutput:
        """Answer the task's question; ends the episode with reward 1.0 when right."""
        return self._grade(params.text)

    @tool
    def lookup(self, params: LookupInput) -> ToolOutput:
        """Look up the rules or an example answer's format."""
        return _out(f"{params.topic}: answer with the exact words", reward=None)


class Clean(_Base):
    """Tools with and without arguments, a task tool on even tasks, two splits: no defect."""

    def _concrete(self) -> None:
        pass

    @tool
    def status(self, params: NoInput) -> ToolOutput:
        """How the task stands; no reward."""
        return _out(f"task {self.task_spec['q']!r} open", reward=None)

    @tool(shared=False)
    def hint(self, params: NoInput) -> ToolOutput:
        """The first word of the answer, on tasks that have a hint."""
        return _out(self.task_spec["a"].split("-")[0], reward=0.0)

    def list_task_tools(self) -> ListToolsOutput:
        if int(self.task_spec["q"].rsplit(" ", 1)[1]) % 2:
            return ListToolsOutput(tools=[])
        schema = NoInput.model_json_schema()
        return ListToolsOutput(
            tools=[
                ToolSpec(name="hint", description="The answer's first word.", input_schema=schema)
            ]
        )


class TrivialReward(_Base):
    """``give_up`` earns the full reward."""

    def _concrete(self) -> None:
        pass

    @tool
    def give_up(self, params: NoInput) -> ToolOutput:
        """Give up on the task."""
        return _out("given up", 1.0, finished=True)


class NondetReward(_Base):
    """``answer``'s reward is noise."""

    def _concrete(self) -> None:
        pass

    @tool
    def answer(self, params: AnswerInput) -> ToolOutput:
        """Answer the task's question."""
        return _out("graded", random.uniform(0.0, 0.5), finished=True)


class NondetOutput(_Base):
    """``answer``'s text changes from call to call; its reward does not."""

    def _concrete(self) -> None:
        pass

    @tool
    def answer(self, params: AnswerInput) -> ToolOutput:
        """Answer the task's question."""
        return _out(f"graded by worker {random.randrange(10**9)}", 0.0, finished=True)


class SplitOverlap(_Base):
    """Test task 1 is train task 2."""

    def _concrete(self) -> None:
        pass

    @classmethod
    def list_tasks(cls, split: str) -> list[dict[str, str]]:
        tasks = _tasks(split)
        if split == "test":
            tasks[1] = _tasks("train")[2]
        return tasks


class DuplicateTasks(_Base):
    """Train task 3 asks what train task 1 asks."""

    def _concrete(self) -> None:
        pass

    @classmethod
    def list_tasks(cls, split: str) -> list[dict[str, str]]:
        tasks = _tasks(split)
        if split == "train":
            tasks[3] = {**tasks[1], "a": "another answer"}
        return tasks


class TaskIndexIgnored(_Base):
    """Every task of a split gets the same prompt."""

    def _concrete(self) -> None:
        pass

    def get_prompt(self) -> list[TextBlock]:
        split = self.task_spec["q"].split(" ")[0]
        return [TextBlock(text=f"Answer a {split} question.")]


class EmptyPrompt(_Base):
    """Train task 2's prompt has no text."""

    def _concrete(self) -> None:
        pass

    def get_prompt(self) -> list[TextBlock]:
        if self.task_spec["q"] == "train question 2":
            return [TextBlock(text="")]
        return super().get_prompt()


class _ScoreBase(_Base):
    REWARD = 0.0

    @abstractmethod
    def _concrete(self) -> None: ...

    @tool
    def score(self, params: NoInput) -> ToolOutput:
        """The score so far."""
        return _out("scored", self.REWARD)


class NanReward(_ScoreBase):
    """``score`` rewards NaN."""

    REWARD = math.nan

    def _concrete(self) -> None:
        pass


class NegInfReward(_ScoreBase):
    """``score`` rewards -Infinity."""

    REWARD = -math.inf

    def _concrete(self) -> None:
        pass


class WideReward(_ScoreBase):
    """``score`` rewards 2.0, outside [0, 1]."""

    REWARD = 2.0

    def _concrete(self) -> None:
        pass


class ServerError(_Base):
    """``answer`` raises on the empty string, a schema-valid argument."""

    def _concrete(self) -> None:
        pass

    @tool
    def answer(self, params: AnswerInput) -> ToolOutput:
        """Answer the task's question."""
        if not params.text:
            raise RuntimeError("empty answer")
        return self._grade(params.text)


# Keyed by task, so that only sessions of one task share a value (the defect). ``recall``
# comes before ``remember`` (tools are listed by name): fresh sessions one after another, each
# remembering the same draft, recall what the one before remembered, the same every time (also
# in a server kept from an earlier run); a session open beside another that remembered
# something else recalls that instead. Both come after ``answer``, which ends the episode.
_DRAFTS: dict[str, str] = {}


class SessionStateLeak(_Base):
    """``remember`` keeps the task's draft at module level, where every session reads it."""

    def _concrete(self) -> None:
        pass

    @tool
    def recall(self, params: NoInput) -> ToolOutput:
        """The draft answer remembered last."""
        return _out(f"draft: {_DRAFTS.get(self.task_spec['q'], '')!r}", 0.0)

    @tool
    def remember(self, params: AnswerInput) -> ToolOutput:
        """Remember a draft answer."""
        _DRAFTS[self.task_spec["q"]] = params.text
        return _out("remembered", 0.0)


class Undocumented(_Base):
    """``answer``'s parameter has no description."""

    def _concrete(self) -> None:
        pass

    @tool
    def answer(self, params: UndocumentedInput) -> ToolOutput:  # type: ignore[override]
        """Answer the task's question."""
        return self._grade(params.text)


class FinishedUnscored(_Base):
    """``answer`` ends the episode with no reward."""

    def _concrete(self) -> None:
        pass

    @tool
    def answer(self, params: AnswerInput) -> ToolOutput:
        """Answer the task's question."""
        return _out("done", reward=None, finished=True)

"""An ORS environment one of whose tools fails on some calls, for the per-tool figures of
``orsgen eval`` (issue 35). Served as ``flakyenv``.

Three tasks in ``test``. ``note`` answers without a reward. ``lookup`` raises on the
server on every third call the server receives (its 1st, 4th, 7th, ...: an environment
failure, after which the SDK ends the session) and scores 1.0 and finishes the episode on
the others.

With ``FLAKY_LEDGER=PATH`` in its environment the server appends one JSON line per
``lookup`` call to PATH (``serial``, ``failed``): what the server saw, to check
``summary.json["tools"]`` against."""

from __future__ import annotations

import itertools
import json
import os
import threading

from pydantic import BaseModel, Field

from openreward.environments import Environment, TextBlock, ToolOutput, tool

_LEDGER = os.environ.get("FLAKY_LEDGER")
_serials = itertools.count()
_lock = threading.Lock()


def _served() -> bool:
    """Count one ``lookup`` call (in the ledger when one is set); whether it fails."""
    with _lock:
        serial = next(_serials)
        failed = serial % 3 == 0
        if _LEDGER is not None:
            with open(_LEDGER, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"serial": serial, "failed": failed}) + "\n")
    return failed


class TextInput(BaseModel):
    text: str = Field(description="The text.")


class FlakyEnv(Environment):
    """Take a note, then look the topic up."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["test"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [{"topic": t} for t in ("rivers", "stars", "trees")]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"Note, then look up {self.task_spec['topic']}.")]

    @tool
    async def note(self, params: TextInput) -> ToolOutput:
        """Take a note (no reward)."""
        return ToolOutput(blocks=[TextBlock(text=f"noted: {params.text}")], finished=False)

    @tool
    async def lookup(self, params: TextInput) -> ToolOutput:
        """Look the topic up; finishes the episode."""
        if _served():
            raise RuntimeError("the lookup backend timed out")
        return ToolOutput(blocks=[TextBlock(text="found")], reward=1.0, finished=True)

"""An echo environment whose behaviour a test switches at the server's start (``orsgen
replay``'s acceptance tests), through the ``REPLAY_ENV`` environment variable:

- unset: each task asks to echo a word; ``echo(text)`` scores 1.0 and finishes on the word,
  0.0 otherwise; task 3's results also carry a small PNG (its hash is recorded);
- ``changed``: task 1's grader is inverted (1.0 for a wrong word, 0.0 for the right one);
- ``flaky``: task 2's grader is inverted in every other session (of those that call echo):
  replays disagree among themselves, and every other one is the recording;
- ``drifting``: task 2's grader gives 0.5 and 0.25 in turn, a session each: replays disagree
  among themselves, and none is the recording;
- ``partial``: a wrong word at a session's first call scores 0.5 (it still does not
  finish): a call's reward moved, not the episode's;
- ``early``: a wrong word finishes the episode (at 0.0);
- ``slow``: task 2's echo touches ``REPLAY_ENV_MARK``'s file, then takes a minute;
- ``renamed``: ``echo``'s parameter ``text`` is called ``word``.
"""

from __future__ import annotations

import base64
import itertools
import os
import struct
import time
import zlib
from pathlib import Path

from pydantic import BaseModel, Field

from openreward.environments import Environment, ImageBlock, TextBlock, ToolOutput, tool

MODE = os.environ.get("REPLAY_ENV", "")
WORDS = ["apple", "banana", "cherry", "damson"]
SESSIONS = itertools.count()  # the sessions of task 2 that called echo, in turn


def _png() -> str:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    ihdr = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    raw = (b"\x00" + bytes((200, 30, 30)) * 2) * 2
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw))
    return base64.b64encode(data + chunk(b"IEND", b"")).decode("ascii")


class TextInput(BaseModel):
    text: str = Field(description="The word to echo back.")


class WordInput(BaseModel):
    word: str = Field(description="The word to echo back.")


Input = WordInput if MODE == "renamed" else TextInput


class ReplayEnv(Environment):
    """Echo the quoted word to score."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec
        self.turn: int | None = None  # this session's place in SESSIONS
        self.calls = 0

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [{"index": i, "target": word} for i, word in enumerate(WORDS)]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"Call echo with the word {self.task_spec['target']!r}.")]

    @tool
    def echo(self, params: Input) -> ToolOutput:  # type: ignore[valid-type]
        """Echo a word back; scores 1.0 when it is the target word."""
        said = str(getattr(params, "word", None) or getattr(params, "text", ""))
        index, right = self.task_spec["index"], said == self.task_spec["target"]
        reward = 1.0 if right else 0.0
        if MODE == "changed" and index == 1:
            reward = 1.0 - reward
        if index == 2 and self.turn is None:
            self.turn = next(SESSIONS)
        if MODE == "flaky" and index == 2 and self.turn % 2:
            reward = 1.0 - reward
        if MODE == "drifting" and index == 2:
            reward = 0.25 if self.turn % 2 else 0.5
        self.calls += 1
        if MODE == "partial" and not right and self.calls == 1:
            reward = 0.5
        if MODE == "slow" and index == 2:
            Path(os.environ["REPLAY_ENV_MARK"]).touch()
            time.sleep(60)
        blocks: list[TextBlock | ImageBlock] = [TextBlock(text=f"echo: {said}")]
        if index == 3:
            blocks.append(ImageBlock(data=_png(), mimeType="image/png"))
        return ToolOutput(blocks=blocks, reward=reward, finished=right or MODE == "early")

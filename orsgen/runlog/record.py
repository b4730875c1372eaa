"""The one typed record of a rollout (issue 47): what an eval row, a replay row and a
training trajectory line all say, under the JSON keys of today's rows. It imports only the
standard library and :mod:`orsgen.rundir`, so every layer may use it.

A rollout is a :class:`Rollout`; each environment call an :class:`EnvCall`; the token counts
a :class:`Usage`. :meth:`Rollout.summary` is the slim form resume and summaries use (as
Inspect's ``EvalSample.summary()``). A text cut by a limit keeps its human-readable mark
(``... (N more characters)``) and carries ``truncated=True`` beside it: no reader parses the
mark.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal, Union

from orsgen.rundir import RunError as RunError

# A JSON value, as a user's checker sees it: no Any.
JSON = Union[str, int, float, bool, None, list["JSON"], dict[str, "JSON"]]
Verdict = Literal["scored", "unfinished", "failed"]
# What produced a row: an evaluation, a replay of one, or a training adapter's trajectory sink.
Source = Literal["eval", "replay", "trajectory"]

# eval/conversation.cut's mark; the only place it is recognised, for rows written before the
# record carried the flag.
_CUT_MARK = re.compile(r"\.\.\. \(\d+ more characters\)\Z")
# The run setting that bounds each stop (a row's "stop" -> run.json's key).
STOP_LIMITS = {
    "length": "max_tokens",
    "max_turns": "max_turns",
    "token_limit": "max_rollout_tokens",
    "timeout": "rollout_timeout",
}


def cut_marked(text: str) -> bool:
    """Whether ``text`` ends with eval's cut mark (rows written before the flag)."""
    return bool(_CUT_MARK.search(text))


def message_truncated(message: Mapping[str, JSON]) -> bool:
    """Whether a stored message's text (its content or a tool call's arguments) was cut at
    its limit: its ``truncated`` flag, or for a row written before the flag, the mark."""
    flag = message.get("truncated")
    if isinstance(flag, bool):
        return flag
    texts = [message.get("content")]
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        texts.append(function.get("arguments") if isinstance(function, dict) else None)
    return any(isinstance(t, str) and cut_marked(t) for t in texts)


@dataclass(frozen=True)
class Usage:
    """A rollout's tokens, as the endpoint reported them (``None``: it did not).
    ``recorded``: the row has a ``usage`` (a replay row, a trajectory line and rows of
    orsgen before it have none)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    recorded: bool = False

    @property
    def total_tokens(self) -> int | None:
        if self.prompt_tokens is None and self.completion_tokens is None:
            return None
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)


@dataclass(frozen=True)
class EnvCall:
    """One environment tool call: its arguments, the text it answered (``truncated`` when cut),
    its reward, whether it finished the episode, and its error (``None``: none).
    ``text_sha256`` is the whole text's hash where only a preview is kept (a trajectory
    line's ``output_sha256``)."""

    tool: str
    arguments: dict[str, JSON]
    text: str
    reward: float | None = None
    finished: bool = False
    error: str | None = None
    seconds: float | None = None
    images: list[JSON] = field(default_factory=list)
    truncated: bool = False
    text_sha256: str | None = None
    sent: bool = True  # False: refused before it left (a trajectory line records it)


@dataclass(frozen=True)
class Rollout:
    """One rollout of a run. ``sample`` is an evaluation's sample index (``None`` for a
    training line, which has ``step`` instead); ``messages`` is the model's conversation (an
    evaluation or replay row; empty for a training line); ``limit`` is the run setting the
    ``stop`` hit (``max_turns`` for ``stop == "max_turns"``, ...), ``None`` for other stops."""

    source: Source
    task_index: int
    split: str
    environment: str
    verdict: Verdict
    reward: float | None
    reason: str | None
    stop: str | None
    finished: bool
    sample: int | None = None
    step: int | None = None
    limit: float | None = None
    seconds: float | None = None
    endpoint_seconds: float | None = None
    environment_seconds: float | None = None
    turns: int | None = None
    usage: Usage = Usage()
    cost: float | None = None
    env_calls: list[EnvCall] = field(default_factory=list)
    messages: list[dict[str, JSON]] = field(default_factory=list)
    invalid_tool_calls: int = 0
    recorded_calls: bool = True  # False: the row has no env_calls (an older orsgen eval's)
    # A replay row's comparison with the recorded rollout (None elsewhere).
    recorded_reward: float | None = None
    recorded_verdict: str | None = None
    changed: bool | None = None
    # An evaluation row's: the group judge's reward, the tool calls it counts and each
    # call's [tool, failed by, seconds] (orsgen.runtime.records.tools).
    group_reward: float | None = None
    calls: int | None = None
    tool_calls: list[JSON] = field(default_factory=list)
    # A trajectory line's: the threshold its adapter judged by, when it started, its
    # reset's seconds, whether the adapter chose its task.
    pass_threshold: float | None = None
    started_at: float | None = None
    reset_s: float | None = None
    task_chosen: bool = False

    @property
    def truncated(self) -> bool:
        """Whether any text of the rollout was cut by a limit."""
        return any(message_truncated(m) for m in self.messages) or any(
            c.truncated for c in self.env_calls
        )

    @property
    def key(self) -> tuple[int, int]:
        """The (task, sample or step) pair that names the rollout within its run."""
        return self.task_index, self.sample if self.sample is not None else (self.step or 0)

    def summary(self) -> Summary:
        """The slim form resume and summaries use: the row without messages and calls."""
        return Summary(
            self.task_index,
            self.key[1],
            self.verdict,
            self.reward,
            self.reason,
            self.seconds or 0.0,
            self.group_reward,
            self.usage.prompt_tokens,
            self.usage.completion_tokens,
            self.stop,
            self.invalid_tool_calls,
            self.cost,
        )


_SLIM = (
    *("task_index", "sample", "verdict", "reward", "reason", "seconds", "group_reward"),
    *("usage", "stop", "invalid_tool_calls", "cost"),
)


@dataclass(frozen=True, slots=True)
class Summary(Mapping[str, JSON]):
    """A rollout's slim form (:meth:`Rollout.summary`): what a run keeps of it once its row
    is on disk (resume, merge and summary.json's figures); also a read-only mapping of those
    fields (``slim["verdict"]``), as a row is (``slim["usage"]`` is the row's ``usage``
    object). A row older than ``stop`` and ``usage`` has ``None`` for them."""

    task_index: int
    sample: int
    verdict: str
    reward: float | None
    reason: str | None
    seconds: float
    group_reward: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    stop: str | None = None
    invalid_tool_calls: int = 0
    cost: float | None = None

    @property
    def usage(self) -> dict[str, JSON]:
        """The row's ``usage``: its prompt and completion tokens (``None`` when unknown)."""
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}

    def __getitem__(self, key: str) -> JSON:
        if key not in _SLIM:
            raise KeyError(key)
        value: JSON = getattr(self, key)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(_SLIM)

    def __len__(self) -> int:
        return len(_SLIM)

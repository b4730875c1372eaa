"""One rollout's record, its state, and its outcome (:func:`classify`: ``scored``,
``unfinished`` or ``failed``, as docs/training.md "Rollouts that never score" defines them).
The outcome carries what the rollout used (:class:`Usage`), so a reward batch's ``ors/*``
figures count *that batch's* rollouts.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import inspect
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from orsgen.runtime.errors import OFF_RECORDING, ToolCallFailure

MAX_OUTPUT_TEXT = 500
MAX_TOOLS = 16  # tools of one adapter class with ors/tool/<name>/* keys of their own
OTHER = "_other"  # where the calls of the others count

Kind = Literal["scored", "unfinished", "failed"]
# Why a rollout ended, as far as an adapter knows (``ors/stop/<reason>``): the environment
# ended the episode, the rollout ended before it did (the trainer stopped it: no tool call,
# its turn or token limits), rollout_timeout passed, or the environment failed.
STOPS = ("finished", "unfinished", "timeout", "error")
TIMED_OUT = "rollout_timeout passed"


class RolloutState(enum.Enum):
    """Where a rollout is. A rollout that went ``VOID`` fails; one that went ``TIMED_OUT``
    (even after being void or released) is unfinished, unless it was void; the others are
    scored when a call scored (else unfinished, or failed when the environment failed)."""

    OPENING = "opening"  # no session yet: reset() has not opened one (or raised)
    OPEN = "open"  # the session is open and the episode runs
    FINISHED = "finished"  # the environment said the episode is over; the session is held
    RELEASED = "released"  # finished and scored, the session closed to free its place
    TIMED_OUT = "timed_out"  # rollout_timeout passed: unfinished, whatever scored before
    VOID = "void"  # the session was lost, or the rollout ran degraded: unscored

    @property
    def finished(self) -> bool:
        return self not in (RolloutState.OPENING, RolloutState.OPEN)


@dataclass(frozen=True)
class ToolUse:
    """One tool's calls: how many, how many failed, their seconds."""

    calls: int = 0
    failed: int = 0
    seconds: float = 0.0

    def __add__(self, other: ToolUse) -> ToolUse:
        return ToolUse(
            self.calls + other.calls, self.failed + other.failed, self.seconds + other.seconds
        )


@dataclass(frozen=True)
class Usage:
    """One rollout's reset (0 or 1, with its seconds) and calls (failed, failed by the
    environment, seconds), and per tool key (every key of its class, called or not)."""

    resets: int = 0
    reset_seconds: float = 0.0
    calls: int = 0
    failed_calls: int = 0
    env_failed_calls: int = 0
    call_seconds: float = 0.0
    tools: Mapping[str, ToolUse] = field(default_factory=lambda: {})


@dataclass(frozen=True)
class Outcome:
    """How a rollout ended: its reward (``unfinished_reward`` applied), kind, and why unscored."""

    reward: float | None
    kind: Kind
    reason: str | None = None
    finished: bool = False  # whether the episode finished
    usage: Usage = Usage()  # the rollout's own reset and calls (its ors/* figures)
    drifted: bool = False  # its task's live tools differed from the snapshot
    environment: str | None = None  # its ors/<env>/* name when several environments train

    @property
    def stop(self) -> str:
        """Why the rollout ended, one of :data:`STOPS`."""
        if self.kind == "failed":
            return "error"
        if self.reason == TIMED_OUT:
            return "timeout"
        return "finished" if self.finished else "unfinished"


@dataclass
class Call:

    tool: str
    arguments: dict[str, Any]
    output: str
    reward: float | None
    finished: bool
    seconds: float
    failure: str | None = None  # the ToolCallFailure reason
    environment_failed: bool = False
    images: tuple[str, ...] = ()  # each image's sha256, in the result's order
    sent: bool = True  # False: refused before it left (client-side checks, no session)

    def record(self) -> dict[str, Any]:
        """The call in a trajectory line: its arguments whole, its result by hash
        (``output_sha256``, of the text replay compares) with a preview (``output``, cut at
        :data:`MAX_OUTPUT_TEXT` characters, ``truncated`` then), and whether it was ``sent``
        (a call refused before it left is not replayed)."""
        return {
            "tool": self.tool,
            "arguments": self.arguments,
            "output": _truncate(self.output, MAX_OUTPUT_TEXT),
            "output_sha256": text_sha256(self.output),
            "truncated": len(self.output) > MAX_OUTPUT_TEXT,
            "images": list(self.images),
            "reward": self.reward,
            "finished": self.finished,
            "error": self.failure,
            "seconds": round(self.seconds, 4),
            "sent": self.sent,
        }

    def replayable(self) -> dict[str, Any]:
        """The call as the adapter sent it and its result as received, whole (an evaluation
        row's ``env_calls``, which ``orsgen replay`` and ``orsgen serve`` read)."""
        out: dict[str, Any] = {"tool": self.tool, "arguments": self.arguments}
        out |= {"text": self.output, "images": list(self.images), "reward": self.reward}
        out["finished"] = self.finished
        return out if self.failure is None else {**out, "error": self.failure}


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def text_sha256(text: str) -> str:
    """The hash a trajectory line records of a call's result text (``orsgen replay``
    compares a replayed text by it)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Episode:

    task_index: int | None = None
    task_spec: bool = False  # opened on an explicit task_spec (its content is not logged)
    chosen: bool = False  # the adapter chose the task (the trainer gave none)
    reset_seconds: float = 0.0
    started_at: float = field(default_factory=time.time)
    calls: list[Call] = field(default_factory=lambda: [])
    void_reason: str | None = None  # "lost_session" / "unavailable": no reward possible
    timed_out: bool = False  # rollout_timeout passed: unfinished, whatever scored before
    written: bool = False  # already in the trajectory log
    uploaded: bool = False  # already queued for the runs UI
    # For the upload alone (never in the trajectory log): the task spec and the prompt.
    spec: Mapping[str, Any] | None = field(default=None, repr=False)
    prompt: Any = field(default=None, repr=False)
    counted: bool = False  # already in the metrics
    drifted: bool = False  # the drift guard's findings held for this task and server

    def called(
        self,
        tool: str,
        arguments: dict[str, Any],
        output: str,
        reward: float | None,
        finished: bool,
        seconds: float,
        failure: ToolCallFailure | None = None,
        images: Sequence[str] = (),
        sent: bool = True,
    ) -> Call:
        call = Call(tool, dict(arguments), output, reward, finished, seconds)
        call.images, call.sent = tuple(images), sent
        if failure is not None:
            call.failure, call.environment_failed = failure.reason, failure.environment_failed
        self.calls.append(call)
        return call

    @property
    def opened(self) -> bool:
        """Whether the rollout's reset got as far as opening a session for a task."""
        return self.task_index is not None or self.task_spec

    @property
    def environment_failure(self) -> str | None:
        if self.void_reason is not None:
            return self.void_reason
        return next((c.failure for c in self.calls if c.environment_failed), None)


def usage_of(
    opened: bool, reset_seconds: float, calls: Sequence[Call], owner: type | None = None
) -> Usage:
    """The usage of a rollout of an ``owner`` adapter that ``opened`` (reset onto a task)
    and made ``calls``; without ``owner``, each call counts under its own wire name."""
    keys = tool_keys(owner) if owner is not None else ()
    names: Mapping[str, str] = model_names(owner) if owner is not None else {}
    tools = {key: ToolUse() for key in keys}
    for c in calls:
        key = names.get(c.tool, c.tool)
        key = key if owner is None or key in keys else OTHER
        tools[key] = tools.get(key, ToolUse()) + ToolUse(1, int(c.failure is not None), c.seconds)
    failed = [c for c in calls if c.failure is not None]
    return Usage(
        resets=int(opened),
        reset_seconds=reset_seconds if opened else 0.0,
        calls=len(calls),
        failed_calls=len(failed),
        env_failed_calls=sum(c.environment_failed for c in failed),
        call_seconds=sum(c.seconds for c in calls),
        tools=tools,
    )


def tool_names(owner: type) -> list[str]:
    """The tools ``GRPOTrainer`` offers the model for an ``owner`` adapter: the class's
    public functions (properties and classmethods excluded) except ``reset`` and
    ``get_reward``, in name order, as ``inspect.getmembers`` lists them to TRL."""
    return [
        name
        for name, _ in inspect.getmembers(owner, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


@functools.cache
def model_names(owner: type) -> Mapping[str, str]:
    """Each tool's wire name mapped to the name the model calls it by (``WIRE_NAMES``); one the
    map leaves out (the terminal tool, never seen by the model) keeps its own."""
    wire_names: Mapping[str, tuple[str, object]] = getattr(owner, "WIRE_NAMES", {})
    return {wire: method for method, (wire, _) in wire_names.items()}


@functools.cache
def tool_keys(owner: type) -> tuple[str, ...]:
    """The tools of ``owner`` with ``ors/tool/<name>/*`` keys: the first :data:`MAX_TOOLS` TRL
    offers the model and the terminal tool, then :data:`OTHER`; the class alone decides (every
    rank logs the same keys)."""
    terminal: tuple[str, object] | None = getattr(owner, "TERMINAL_TOOL", None)
    names = tool_names(owner) + ([] if terminal is None else [terminal[0]])
    return tuple(names[:MAX_TOOLS]) + ((OTHER,) if len(names) > MAX_TOOLS else ())


def classify(
    episode: Episode,
    rewards: list[float | None],
    unfinished_reward: float | None,
    finished: bool = False,
    owner: type | None = None,
    environment: str | None = None,
) -> Outcome:
    """The outcome of a rollout whose calls gave ``rewards`` (see the module docstring)."""
    scored = [r for r in rewards if r is not None]
    failure = episode.environment_failure
    reward: float | None = unfinished_reward
    kind: Kind = "unfinished"
    reason: str | None = None
    if episode.void_reason is not None:
        reward, kind, reason = None, "failed", episode.void_reason
    elif episode.timed_out:
        reason = TIMED_OUT
    elif scored:
        reward, kind, reason = float(scored[-1]), "scored", None
    elif failure is not None:
        reward, kind, reason = None, "failed", failure
    elif not episode.calls:
        reason = "no tool call"
    elif any(c.finished for c in episode.calls):
        reason = "finished without a score"
    elif all(c.failure == OFF_RECORDING for c in episode.calls):
        reason = "only calls off the recording"  # orsgen serve's: not the model's mistake
    elif all(c.failure is not None for c in episode.calls):
        reason = "only invalid calls"
    else:
        reason = "no call scored"
    usage = usage_of(episode.opened, episode.reset_seconds, episode.calls, owner)
    return Outcome(reward, kind, reason, finished, usage, episode.drifted, environment)

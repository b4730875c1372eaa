"""Sessions and calls for the probes, on the runtime's session class (which never re-runs a
tool after a cut before the server's task id). A call's result is a ``result``, a
``tool_error`` (``ok: false``: the model's mistake) or a ``server_failure``."""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import aiohttp

from orsgen.canonical import spec_dict
from orsgen.runtime.errors import describe
from orsgen.runtime.images import blocks_to_text
from orsgen.runtime.records.tools import nearest_rank
from orsgen.runtime.transport import sdk
from orsgen.runtime.transport.endpoint import Endpoint
from orsgen.validation.result import json_number

Kind = Literal["result", "tool_error", "server_failure"]
MAX_TEXT = 400  # characters of an output or error kept as evidence

# The SDK writes the session id into its errors: noise that differs between sessions.
_SESSION_ID = re.compile(r"\(\w+ session sid=[^)]*\)\s*")


def _short(text: str) -> str:
    text = " ".join(_SESSION_ID.sub("", text).split())
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def failure_kind(exc: BaseException) -> str | None:
    """What server failure ``exc`` is (``http 500``, ``sse error event``, ``dropped
    stream``, ``timeout``), or ``None`` when the server answered ``ok: false`` or a 4xx."""
    name = type(exc).__name__
    if name == "ToolCallError":
        return None  # ok: false, a tool error
    if name == "ToolFailed":
        return "sse error event"
    if name == "SessionTerminatedError":  # the session ended on the server
        return "session ended"
    status = getattr(exc, "status", None)  # aiohttp's ClientResponseError, the SDK's HTTP error
    if isinstance(status, int):
        return f"http {status}" if status >= 500 else None
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or name == "HeartbeatTimeoutError":
        return "timeout"
    if name == "MaxRetriesError":
        errors: list[Any] = list(getattr(exc, "errors", None) or [])
        last: object = errors[-1] if errors else None
        return failure_kind(last) if isinstance(last, BaseException) else "dropped stream"
    if isinstance(exc, aiohttp.ClientError):  # a dropped payload or connection among them
        return "dropped stream"
    return f"error {name}"


@dataclass(frozen=True)
class Call:
    """One tool call and what came back."""

    tool: str
    arguments: Mapping[str, Any]
    kind: Kind
    reward: float | None = None
    finished: bool = False
    output: str = ""
    error: str | None = None
    failure: str | None = None  # the server failure's kind (``server_failure`` only)

    @property
    def ends(self) -> bool:
        """Whether the rollout is over after this call: it finished or the server failed."""
        return self.finished or self.kind == "server_failure"

    def same(self, other: Call) -> tuple[bool, bool]:
        """(same reward, finished and kind; same output too) as ``other`` (NaN is NaN)."""
        a, b = (
            (c.kind, c.finished, json_number(c.reward), c.output, c.error) for c in (self, other)
        )
        return a[:3] == b[:3], a == b

    def evidence(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tool": self.tool,
            "arguments": dict(self.arguments),
            "result": self.kind,
            "reward": json_number(self.reward),
            "finished": self.finished,
        }
        out |= {"output": self.output} if self.kind == "result" else {"error": self.error}
        if self.failure is not None:
            out["failure"] = self.failure
        return out


def _reward(value: Any) -> float | None:
    """A reward off the wire: ``null`` is no reward; ``NaN`` and ``Infinity`` arrive as
    JSON literals (Python's json reads them as floats) and are kept as they are."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


@dataclass
class Timings:
    """Seconds of every request kind (session open, prompt, each tool), appended from the
    loop thread only."""

    open: list[float] = field(default_factory=list[float])
    prompt: list[float] = field(default_factory=list[float])
    tools: dict[str, list[float]] = field(default_factory=dict[str, list[float]])

    def latency(self) -> dict[str, Any]:
        """validation.json's ``latency``: each kind's count, p50 and p95 (nearest rank)."""
        tools = {t: _figures(s) for t, s in sorted(self.tools.items())}
        return {
            "session_open": _figures(self.open),
            "prompt": _figures(self.prompt),
            "tools": tools,
        }


def _figures(seconds: Sequence[float]) -> dict[str, Any]:
    out: dict[str, Any] = {"count": len(seconds)}
    for name, q in (("p50", 0.5), ("p95", 0.95)):
        found = nearest_rank(seconds, q)
        out[name] = None if found is None else round(found, 4)
    return out


@dataclass
class Prober:
    """Opens sessions on one environment and makes calls in them."""

    endpoint: Endpoint
    secrets: dict[str, Any] | None
    toolset: str | None
    timeout: float
    timings: Timings = field(default_factory=Timings)
    env: Any = None

    async def environment(self) -> Any:
        if self.env is None:
            self.env = await sdk.environment(self.endpoint)
        return self.env

    async def open(self, split: str, index: int) -> Any:
        """An open session on task ``index`` of ``split`` (the caller closes it)."""
        env = await self.environment()
        session = sdk.session_class()(
            env,
            secrets=self.secrets,
            api_key=env.api_key,
            split=split,
            index=index,
            toolset_name=self.toolset,
        )
        started = time.monotonic()
        try:
            await asyncio.wait_for(session.__aenter__(), self.timeout)
        except BaseException:
            await sdk.close_async(session)
            raise
        self.timings.open.append(time.monotonic() - started)
        return session

    async def look(self, session: Any) -> tuple[str, bool, list[dict[str, Any]]]:
        """The session's prompt text, whether it holds an image, and its tools."""
        started = time.monotonic()
        blocks = list(await asyncio.wait_for(session.get_prompt(), self.timeout) or [])
        self.timings.prompt.append(time.monotonic() - started)
        tools = await asyncio.wait_for(session.list_tools(), self.timeout)
        image = any(getattr(b, "type", None) == "image" for b in blocks)
        return blocks_to_text(blocks), image, [spec_dict(t) for t in tools]

    async def call(self, session: Any, tool: str, arguments: Mapping[str, Any]) -> Call:
        started = time.monotonic()
        try:
            out = await asyncio.wait_for(session.call_tool(tool, dict(arguments)), self.timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure is an observation
            kind = failure_kind(exc)
            detail = getattr(exc, "detail", None) if kind is None else None
            text = _short(str(detail) if detail else describe(exc))
            result: Kind = "tool_error" if kind is None else "server_failure"
            made = Call(tool, arguments, result, error=text, failure=kind)
        else:
            reward = _reward(getattr(out, "reward", None))
            text = _short(blocks_to_text(list(getattr(out, "blocks", None) or [])))
            finished = bool(getattr(out, "finished", False))
            made = Call(tool, arguments, "result", reward, finished, text)
        self.timings.tools.setdefault(tool, []).append(time.monotonic() - started)
        return made

    async def calls(
        self, session: Any, planned: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[Call]:
        """``planned`` in order in ``session``, up to the first ``finished`` or server
        failure (a rollout ends there)."""
        made: list[Call] = []
        for tool, arguments in planned:
            call = await self.call(session, tool, arguments)
            made.append(call)
            if call.ends:
                break
        return made

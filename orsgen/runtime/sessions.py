"""Opening and closing ORS sessions on the runtime loop.

Every session this process opens is either held by an adapter (its :class:`SessionSlot`),
waiting in a group-prefetch pool, or being closed in the background. The process's
:class:`~orsgen.runtime.process.Runtime` tracks all three, so that interpreter exit can
close whatever is left, concurrently and within a bounded time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orsgen.runtime import keepalive
from orsgen.runtime.blocks import blocks_to_text
from orsgen.runtime.connection import Endpoint, environment
from orsgen.runtime.process import Runtime, current

# Upper bound for one session's teardown (two requests). A dead server makes the SDK
# retry; closing must still end.
CLOSE_BUDGET = 5.0
# How long an explicit ``adapter.close()`` waits before leaving the rest to the background.
CLOSE_WAIT = 5.0


@dataclass
class Opened:
    """A freshly opened session, its prompt text and blocks, and (when asked for) its live
    tool list."""

    session: Any
    prompt: str
    tools: list[Any] | None = None
    blocks: list[Any] = field(default_factory=list)


@functools.cache
def _session_class() -> Any:
    """The SDK's ``AsyncSession`` with orsgen's keepalive and a tool call that is never
    sent twice.

    - Pings run in :func:`orsgen.runtime.keepalive.ping_loop` (every ``keepalive`` s, the
      SDK's 10 s by default), which stops at the first sign that the server lost the session.
    - ``call_tool`` is the SDK's own, with ``resumable_only=True``: the SDK otherwise posts
      ``/call`` again after a failure that came before the server's task id, which may run
      the tool twice. A stream cut after the task id is still resumed.
    """
    # Typed as Any: the SDK ships no types, and its private helpers are used on purpose.
    sdk: Any = importlib.import_module("openreward.api.environments.client")

    class KeepaliveSession(sdk.AsyncSession):  # type: ignore[misc]
        keepalive: float | None = None
        lost = False  # the server answered that it no longer knows this session

        async def _run_ping(
            self,
            url: str,
            sid: str,
            api_key: str | None,
            sleep_time: float,
            deployment: str | None,
            **kwargs: Any,
        ) -> None:
            interval = self.keepalive if self.keepalive is not None else sleep_time
            await keepalive.ping_loop(self, interval)

        async def call_tool(self, tool_name: str, input: Any = None) -> Any:
            if self._dead_exception is not None:  # before making the request coroutine
                raise self._dead_exception
            try:
                res = await self._run_or_die(_call_stream(sdk, self, tool_name, input))
            except sdk._RemoteSSEError as e:  # the tool raised: the SDK ends the session
                self._mark_dead(sdk.ErrorResponse(type="error", message=str(e)))
                raise sdk.ToolFailed(str(e)) from e
            return _tool_output(sdk, res)

    return KeepaliveSession


def _call_stream(sdk: Any, session: Any, tool_name: str, input: Any) -> Any:
    """The SDK's ``/call`` request for ``session``, resumed only after the server's task id
    (``resumable_only=True``), so a tool is never run twice."""
    return sdk.resumable_sse(
        session.client,
        session._env_path("/call"),
        sid=session.sid,
        deployment=session.deployment,
        token=session.api_key,
        json={"name": tool_name, "input": dict(input or {})},
        max_retries=5,
        resumable_only=True,
    )


def _tool_output(sdk: Any, res: Mapping[str, Any]) -> Any:
    """The SDK's ``ToolOutput`` for a ``/call`` result, or its ``ToolCallError``, as the
    SDK's own ``call_tool`` makes them."""
    if res["ok"]:
        out = res["output"]
        return sdk.ToolOutput(
            blocks=sdk._parse_blocks(out["blocks"]),
            metadata=out["metadata"],
            reward=out["reward"],
            finished=out["finished"],
        )
    reason = res.get("reason")
    if reason not in sdk._VALID_REASONS:
        reason = sdk._infer_invalid_reason(res["error"])
    raise sdk.ToolCallError(reason=reason, detail=res["error"])


async def open_session(
    endpoint: Endpoint,
    split: str,
    index: int | None,
    task_spec: Mapping[str, Any] | None,
    secrets: dict[str, str] | None,
    keepalive: float | None,
    fetch_tools: bool = False,
    toolset: str | None = None,
    env_overrides: Mapping[str, str] | None = None,
) -> Opened:
    """Open one session and read its prompt (three requests: ``/create_session``,
    ``/create``, ``/{env}/prompt``), plus ``/{env}/task_tools`` when ``fetch_tools``.

    A failure or cancellation after the server handed out a sid deletes it again, so
    an aborted open never leaks a session.
    """
    env = await environment(endpoint)
    # The SDK's keywords for a bound harness toolset and container environment variables.
    bound = {"toolset_name": toolset, "env_overrides": env_overrides}
    if task_spec is not None:
        task = _task(endpoint, env, task_spec)
        session = _session_class()(env, task=task, secrets=secrets, api_key=env.api_key, **bound)
    else:
        session = _session_class()(
            env, secrets=secrets, api_key=env.api_key, split=split, index=index, **bound
        )
    session.keepalive = keepalive
    try:
        await session.__aenter__()
        return await _read_opened(session, fetch_tools)
    except BaseException:
        if session.sid is not None or getattr(session, "_pending_task_id", None) is not None:
            try:
                await asyncio.wait_for(_aexit(session), CLOSE_BUDGET)
            except BaseException:  # noqa: BLE001 - best effort; the server reaps the rest
                pass
        raise


async def _read_opened(session: Any, fetch_tools: bool) -> Opened:
    """An entered session's prompt, and its tool list when ``fetch_tools`` (concurrently)."""
    tools: list[Any] | None = None
    if fetch_tools:
        blocks, listed = await asyncio.gather(
            _prompt(session), _tools_or_none(session), return_exceptions=False
        )
        tools = listed
    else:
        blocks = await _prompt(session)
    blocks = list(blocks or [])
    return Opened(session=session, prompt=blocks_to_text(blocks), tools=tools, blocks=blocks)


def _task(endpoint: Endpoint, env: Any, task_spec: Mapping[str, Any]) -> Any:
    """The SDK's ``Task`` for a session opened on an explicit task spec."""
    from openreward.api.environments.types import Task  # type: ignore[import-untyped]

    return Task(
        server_name=env.server,
        environment_name=endpoint.env_name or env.name,
        task_spec=dict(task_spec),
        namespace=env.namespace,
    )


async def _prompt(session: Any) -> Any:
    # A typed coroutine: `gather` over the SDK's untyped one would be Unknown to pyright.
    return await session.get_prompt()


async def _tools_or_none(session: Any) -> list[Any] | None:
    try:
        return list(await session.list_tools())
    except Exception:  # noqa: BLE001 - the drift guard is advisory when the listing fails
        return None


async def _aexit(session: Any) -> None:
    await session.__aexit__(None, None, None)


async def close_async(session: Any) -> None:
    """Close a session from a coroutine on the runtime loop; never raises."""
    try:
        await asyncio.wait_for(_aexit(session), CLOSE_BUDGET)
    except BaseException:  # noqa: BLE001 - closing is best effort
        pass


def close_later(session: Any) -> concurrent.futures.Future[None]:
    """Close a session in the background on the runtime loop; tracked until done."""
    runtime = current()
    fut = runtime.submit(close_async(session))
    runtime.closing(fut)
    return fut


def close_now(session: Any, wait: float = CLOSE_WAIT) -> None:
    """Close a session and wait for it at most ``wait`` seconds (the rest goes on in the
    background). From the loop thread itself it only schedules."""
    fut = close_later(session)
    if current().in_loop_thread():
        return
    try:
        fut.result(timeout=wait)
    except Exception:  # noqa: BLE001
        pass


class SessionSlot:
    """Holds an adapter's open SDK session apart from the adapter, so a finalizer can close
    it without keeping the adapter alive."""

    def __init__(self, owner: type) -> None:
        self.session: Any = None
        self.owner = owner
        self._runtime: Runtime | None = None

    def hold(self, session: Any) -> None:
        """Hold a session just opened; the process's runtime closes it at exit."""
        self._runtime = current()
        self._runtime.hold(self)
        self.session = session

    def take(self) -> Any:
        session, self.session = self.session, None
        return session

    def close(self, wait: bool = True) -> None:
        session = self.take()
        if session is None or self._runtime is not current():
            return  # nothing held, or a forked child's copy of its parent's session
        if wait:
            close_now(session)
        else:
            close_later(session)

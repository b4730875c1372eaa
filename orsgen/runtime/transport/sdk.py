"""The one orsgen module that touches the openreward SDK's private APIs (its session internals,
``openreward.api._session``, the environments client). All of it runs on the runtime loop.

The pings (:func:`ping_loop`) replace the SDK's pinger, which logs every failed ping and keeps
pinging a session the server has forgotten (404 "Active environment not found" after a
restart) for minutes: these stay quiet while the server is away (``health`` logs that once),
and on "not found" mark the session lost, log one line and stop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from orsgen.runtime.errors import describe
from orsgen.runtime.images import blocks_to_text
from orsgen.runtime.transport import health, http, sdk_check
from orsgen.runtime.transport.endpoint import Endpoint
from orsgen.runtime.transport.process import current

log = logging.getLogger("orsgen.runtime")

# Upper bound for one session's teardown (two requests), which a dead server makes retry.
CLOSE_BUDGET = 5.0
PING_TIMEOUT = 30.0


# Typed as Any (the SDK ships no types), imported on first use (that takes seconds).
def _client_module() -> Any:
    sdk_check.check()  # once: does the installed SDK have what this module uses?
    import openreward.api.environments.client as client  # type: ignore[import-untyped]

    return client


def _http_module() -> Any:
    sdk_check.check()
    import openreward.api._session.http as sdk_http  # type: ignore[import-untyped]

    return sdk_http


@dataclass
class Opened:
    """A freshly opened session, its prompt, and (when asked for) its live tools."""

    session: Any
    prompt: str
    tools: list[Any] | None = None
    blocks: list[Any] = field(default_factory=list)
    # Where it was opened, and its place under the session cap (``orsgen.runtime.sessions.cap``).
    endpoint: Endpoint | None = None
    place: Any = None


@functools.cache
def session_class() -> Any:
    """The SDK's ``AsyncSession`` with pings in :func:`ping_loop` (every ``keepalive`` s, the
    SDK's 10 s by default), and its own ``call_tool`` with ``resumable_only=True``: the SDK
    otherwise posts ``/call`` again after a failure that came before the server's task id,
    which may run the tool twice. A stream cut after the task id is still resumed."""
    sdk: Any = _client_module()

    class Session(sdk.AsyncSession):  # type: ignore[misc]
        keepalive: float | None = None
        lost = False  # the server answered that it no longer knows this session

        @property
        def dead_error(self) -> BaseException | None:
            """Why the SDK ended this session (a tool raised, pings failed), or ``None``."""
            found: BaseException | None = self._dead_exception
            return found

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
            await ping_loop(self, interval)

        async def call_tool(self, tool_name: str, input: Any = None) -> Any:
            if self._dead_exception is not None:  # before making the request coroutine
                raise self._dead_exception
            call = sdk.resumable_sse(
                self.client,
                self._env_path("/call"),
                sid=self.sid,
                deployment=self.deployment,
                token=self.api_key,
                json={"name": tool_name, "input": dict(input or {})},
                max_retries=5,
                resumable_only=True,
            )
            try:
                res = await self._run_or_die(call)
            except sdk._RemoteSSEError as e:  # the tool raised: the SDK ends the session
                self._mark_dead(sdk.ErrorResponse(type="error", message=str(e)))
                raise sdk.ToolFailed(str(e)) from e
            return _tool_output(sdk, res)

    return Session


def _tool_output(sdk: Any, res: Mapping[str, Any]) -> Any:
    """The SDK's ``ToolOutput`` for a ``/call`` result, or its ``ToolCallError``."""
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
    """Open one session and read its prompt (and tools with ``fetch_tools``); a failure or
    cancellation deletes what it opened."""
    env = await environment(endpoint)
    # The SDK's keywords for a bound harness toolset and container environment variables.
    where: dict[str, Any] = {"toolset_name": toolset, "env_overrides": env_overrides}
    if task_spec is not None:
        where["task"] = _client_module().Task(
            server_name=env.server,
            environment_name=endpoint.env_name or env.name,
            task_spec=dict(task_spec),
            namespace=env.namespace,
        )
    else:
        where.update(split=split, index=index)
    session = session_class()(env, secrets=secrets, api_key=env.api_key, **where)
    session.keepalive = keepalive
    try:
        await session.__aenter__()
        prompt = _prompt(session)
        if fetch_tools:
            blocks, tools = await asyncio.gather(prompt, _tools_or_none(session))
        else:
            blocks, tools = await prompt, None
    except BaseException:
        # The SDK's exit deletes what the open created (a session, or a task still being
        # created) and nothing else, and closes the session's own HTTP client.
        await close_async(session)
        raise
    blocks = list(blocks or [])
    return Opened(session, blocks_to_text(blocks), tools, blocks, endpoint)


async def _prompt(session: Any) -> Any:
    # A typed coroutine: `gather` over the SDK's untyped one would be Unknown to pyright.
    return await session.get_prompt()


async def _tools_or_none(session: Any) -> list[Any] | None:
    try:
        return list(await session.list_tools())
    except Exception:  # noqa: BLE001 - the drift guard is advisory when the listing fails
        return None


async def close_async(session: Any) -> None:
    """Close a session from a coroutine on the runtime loop; never raises."""
    try:
        await asyncio.wait_for(session.__aexit__(None, None, None), CLOSE_BUDGET)
    except BaseException:  # noqa: BLE001 - closing is best effort
        pass


def client_for(url: str, *, env_server: bool = True) -> Any:
    """The process's HTTP client for a URL, with the SDK's env-server retry policy or not."""
    found = http.client(url)
    if env_server:  # DrainingClient stands in for the ClientSession the SDK annotates
        _http_module().set_retry_policy(found, "env-server")
    return found


async def environment(endpoint: Endpoint) -> Any:
    """The SDK's ``AsyncEnvironment`` for an endpoint, on orsgen's HTTP clients; addressed by
    name (``variant``), so no call pays for a redirect to the default one."""
    target = endpoint.deployment or endpoint.env_name or "env"
    namespace, _, name = target.partition("/") if "/" in target else ("", "", target)
    return _client_module().AsyncEnvironment(
        namespace=namespace or None,
        name=name,
        variant=endpoint.env_name,
        client=client_for(endpoint.session_url),
        api_key=endpoint.api_key,
        api_client=client_for(endpoint.api_url, env_server=False),
    )


# Told of each retry, before its wait: tenacity's retry state, and the attempts the SDK
# makes in all (``None`` for a backend that is still starting: retried until it is up).
BeforeRetry = Callable[[Any, "int | None"], None]


async def stateless(
    endpoint: Endpoint,
    env: Any,
    method: str,
    path: str,
    payload: dict[str, Any] | None = None,
    *,
    before_retry: BeforeRetry | None = None,
) -> Any:
    """One stateless request (tools, splits, tasks) through the SDK transport and its retries,
    without the throwaway session the SDK's own helpers open and delete around it."""
    sdk_http = _http_module()
    # The retries of env.client's policy: env-server, as client_for set it.
    send = sdk_http._request_retryable_env_server
    if before_retry is not None:  # the same retries, with a hook
        attempts = int(sdk_http._ENV_SERVER_MAX_ATTEMPTS)

        def before_sleep(state: Any) -> None:
            before_retry(state, attempts)

        send = send.retry_with(before_sleep=before_sleep)
    token = endpoint.api_key or None
    deployment = endpoint.deployment or endpoint.env_name
    return await send(env.client, method, path, True, token, json=payload, deployment=deployment)


def is_authentication_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the SDK's answer to a rejected API key (HTTP 401)."""
    return isinstance(exc, _http_module().AuthenticationError)


def mark_lost(session: Any, exc: BaseException) -> None:
    """The server no longer knows this session: log once, stop its pings, and make later calls
    on it fail at once. Safe from any thread."""
    if getattr(session, "lost", False):
        return
    session.lost = True
    env = getattr(session, "env", None)
    name = getattr(env, "variant", None) or getattr(env, "name", None) or "environment"
    log.warning(
        "orsgen: session %s on %s at %s was lost (%s: the server restarted, or reaped it); "
        "its rollout ends unscored",
        session.sid,
        name,
        session.base_url,
        describe(exc),
    )

    def _dead() -> None:
        lost = _client_module().ErrorResponse(type="error", message="the server lost this session")
        session._mark_dead(lost)

    process = current()
    if process.in_loop_thread():
        _dead()
    else:
        process.loop.call_soon(_dead)


async def ping_loop(session: Any, interval: float) -> None:
    """Ping every ``interval`` seconds until the session dies, is lost, or is closed (why not
    the SDK's pinger: docs/scale.md, "Keepalive")."""
    record = health.record(session.base_url)
    warned = False
    while True:
        try:
            await asyncio.wait_for(session._dead.wait(), interval)
            return  # the session died (or was lost): nothing left to keep alive
        except asyncio.TimeoutError:
            pass
        ping = _http_module().request_retryable(
            session.client,
            "POST",
            "/ping",
            expect_json=False,
            token=session.api_key,
            sid=session.sid,
            deployment=session.deployment,
        )
        try:
            await asyncio.wait_for(ping, PING_TIMEOUT)
            record.answered()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a ping failure never ends the loop by itself
            if health.is_lost(exc):
                mark_lost(session, exc)
                return
            if health.unreachable(exc):
                record.away(exc)
            elif not warned:
                warned = True
                log.warning(
                    "orsgen: keepalive ping of session %s failed: %s", session.sid, describe(exc)
                )


async def score_group(session: Any, answers: list[str]) -> list[float]:
    """The environment's judgement of a group's final answers (ORS ``score_group``)."""
    types = _client_module()
    candidates = [
        [types.Message(role="assistant", blocks=[types.TextBlock(text=a)])] for a in answers
    ]
    scores = await session.score_group(candidates)
    return [float(s.reward) for s in scores]

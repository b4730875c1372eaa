"""The base class every generated adapter stands on.

A generated adapter subclasses :class:`OrsAdapter` and adds one typed public
method per ORS tool. TRL turns every public *function* of the class into a tool
(except ``reset`` and ``get_reward``), so this base defines no other public
function: its helpers are private and ``close`` is a property.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from orsgen.runtime import loop
from orsgen.runtime.blocks import blocks_to_text
from orsgen.runtime.connection import Endpoint, environment, resolve, session_secrets

DEFAULT_CALL_TIMEOUT = 600.0
DEFAULT_OPEN_TIMEOUT = 1800.0
_CLOSE_TIMEOUT = 15.0


class SessionOpenError(RuntimeError):
    """``reset()`` could not open a session; TRL cannot run a rollout without a prompt."""


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())


_live_slots: "weakref.WeakSet[_SessionSlot]" = weakref.WeakSet()


def close_all_sessions() -> None:
    """Close every session this process still holds (run at interpreter exit)."""
    for slot in list(_live_slots):
        slot.close()


loop.on_shutdown(close_all_sessions, priority=0)


class _SessionSlot:
    """Holds the open SDK session apart from the adapter, so a finalizer can close
    it without keeping the adapter alive."""

    def __init__(self) -> None:
        self.session: Any = None
        _live_slots.add(self)

    def close(self) -> None:
        session, self.session = self.session, None
        if session is None:
            return
        if loop.in_loop_thread():
            # Called from the loop itself (e.g. GC there): schedule, never block it.
            loop.submit(_close_session(session))
            return
        try:
            loop.run(_close_session(session), timeout=_CLOSE_TIMEOUT)
        except Exception:  # noqa: BLE001 - closing is best effort; the server reaps the rest
            pass


async def _close_session(session: Any) -> None:
    await session.__aexit__(None, None, None)


async def _open_session(
    endpoint: Endpoint,
    split: str,
    index: int | None,
    task_spec: Mapping[str, Any] | None,
    secrets: dict[str, str] | None,
) -> tuple[Any, str]:
    env = await environment(endpoint)
    if task_spec is not None:
        from openreward.api.environments.types import Task

        task = Task(
            server_name=env.server,
            environment_name=endpoint.env_name or env.name,
            task_spec=dict(task_spec),
            namespace=env.namespace,
        )
        session = env.session(task=task, secrets=secrets)
    else:
        session = env.session(split=split, index=index, secrets=secrets)
    opened = False
    try:
        await session.__aenter__()
        opened = True
        prompt = blocks_to_text(await session.get_prompt())
    except BaseException:
        if opened or session.sid is not None:
            try:
                await session.__aexit__(None, None, None)
            except Exception:  # noqa: BLE001
                pass
        raise
    return session, prompt


class OrsAdapter:
    """Base class of generated ORS adapters. Construct freely: no network I/O happens
    until :meth:`reset`.

    Args:
        base_url: URL of a single-host ORS server. Defaults to ``OPENREWARD_SESSION_URL``,
            then the URL recorded in the snapshot, then the catalog platform.
        api_key: API key; defaults to ``OPENREWARD_API_KEY``. Never stored in generated code.
        secrets: per-session secrets, sent in the ``X-Secrets`` header.
        env_name: environment name on the server; defaults to the snapshot's.
        deployment: catalog name (``namespace/name``); defaults to the snapshot's.
        split: split used by ``reset(task_index=...)``; defaults to the snapshot's.
        timeout: seconds a tool call may take before it returns an error.
        open_timeout: seconds opening a session (including the environment's setup) may take.
    """

    ENV_NAME: ClassVar[str | None] = None
    DEPLOYMENT: ClassVar[str | None] = None
    DEFAULT_URL: ClassVar[str | None] = None
    DEFAULT_SPLIT: ClassVar[str] = "train"
    TOOLS_SHA256: ClassVar[str] = ""
    WIRE_NAMES: ClassVar[Mapping[str, tuple[str, Mapping[str, str]]]] = {}

    reward: float | None
    rewards: list[float | None]
    metadata: list[dict[str, Any] | None]
    finished: bool
    last_output: str

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        secrets: Mapping[str, str] | None = None,
        env_name: str | None = None,
        deployment: str | None = None,
        split: str | None = None,
        timeout: float = DEFAULT_CALL_TIMEOUT,
        open_timeout: float = DEFAULT_OPEN_TIMEOUT,
    ) -> None:
        self._endpoint = resolve(
            base_url=base_url,
            api_key=api_key,
            env_name=env_name,
            deployment=deployment if deployment is not None else self.DEPLOYMENT,
            default_url=self.DEFAULT_URL,
            default_env_name=self.ENV_NAME,
        )
        self._secrets = session_secrets(self._endpoint, secrets)
        self._split = split or self.DEFAULT_SPLIT
        self._timeout = timeout
        self._open_timeout = open_timeout
        self._lock = threading.RLock()
        self._slot = _SessionSlot()
        self._finalizer = weakref.finalize(self, self._slot.close)
        self._finalizer.atexit = False  # the runtime's own exit hook closes sessions in order
        self._clear_state()

    def _clear_state(self) -> None:
        self.reward = None
        self.rewards = []
        self.metadata = []
        self.finished = False
        self.last_output = ""

    def reset(
        self,
        task_index: int | None = None,
        task_spec: Mapping[str, Any] | None = None,
        **row: Any,
    ) -> str:
        """Close any previous session, open one for ``task_index`` (or ``task_spec``) and
        return the prompt text. Extra dataset columns in ``row`` are accepted and ignored."""
        with self._lock:
            self._slot.close()
            self._clear_state()
            index = None if task_spec is not None else int(task_index or 0)
            try:
                session, prompt = loop.run(
                    _open_session(self._endpoint, self._split, index, task_spec, self._secrets),
                    timeout=self._open_timeout,
                )
            except Exception as exc:
                which = "the given task_spec" if index is None else f"task {index}"
                raise SessionOpenError(
                    f"could not open an ORS session for {which} of split {self._split!r} on "
                    f"{self._endpoint.label}: {_describe(exc)}"
                ) from exc
            self._slot.session = session
            return prompt

    @property
    def close(self) -> Callable[[], None]:
        """``adapter.close()`` ends the open session. A property, not a method, so TRL
        never offers it to the model as a tool."""
        return self._slot.close

    def _record(self, text: str, reward: float | None, metadata: dict[str, Any] | None) -> str:
        self.rewards.append(reward)
        self.metadata.append(metadata)
        if reward is not None:
            self.reward = reward
        self.last_output = text
        return text

    def _fail(self, message: str) -> str:
        return self._record(f"Error: {message}", None, None)

    def _call(self, wire_name: str, arguments: dict[str, Any]) -> str:
        """Call a tool by its wire name. Never raises: failures come back as ``Error: ...``."""
        with self._lock:
            session = self._slot.session
            if session is None:
                return self._fail(f"no open session for tool {wire_name!r}; call reset() first")
            try:
                out = loop.run(session.call_tool(wire_name, arguments), timeout=self._timeout)
            except Exception as exc:  # noqa: BLE001 - the trainer must never see a raise
                return self._fail(f"tool {wire_name!r} failed: {_describe(exc)}")
            reward: float | None = None
            if out.reward is not None:
                try:
                    reward = float(out.reward)
                except (TypeError, ValueError):
                    reward = None
            if out.finished:
                self.finished = True
            meta = dict(out.metadata) if isinstance(out.metadata, Mapping) else None
            text = blocks_to_text(out.blocks or []) or "(no output)"
            return self._record(text, reward, meta)


class _Unset:
    """Default of an optional tool argument the caller did not give: it is not sent."""

    _instance: "_Unset | None" = None

    def __new__(cls) -> "_Unset":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<unset>"

    def __reduce__(self) -> str:
        return "UNSET"


# Typed Any so an optional ``path: str = UNSET`` stays ``str`` for mypy and for TRL's
# schema (a ``str | None`` hint would tell the model null is allowed when it is not).
UNSET: Any = _Unset()

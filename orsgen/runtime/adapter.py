"""The base class every generated adapter stands on.

A generated adapter subclasses :class:`OrsAdapter` and adds one typed public
method per ORS tool. TRL turns every public *function* of the class into a tool
(except ``reset`` and ``get_reward``), so this base defines no other public
function: its helpers are private and ``close`` is a property.

Training-scale behaviour (see ``docs/runtime.md``):

- one request per tool call: the environment is addressed by name, so no call
  pays for the server's redirect;
- group prefetch: GRPO's G consecutive resets of one task open their sessions
  concurrently (:mod:`orsgen.runtime.prefetch`);
- picklable and thread-safe: the class (or a ``functools.partial`` of it) is the
  factory, instances hold a lock, and all I/O runs on one loop per process;
- no leaks: sessions close on ``reset()``, ``close()``, garbage collection and exit;
- bounded time: every call has a timeout, and every failure is ``"Error: ..."`` text;
- the drift guard: the first session per class and process checks the live tools
  against the snapshot (:mod:`orsgen.runtime.drift`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from orsgen.runtime import drift, images, loop, prefetch, sessions
from orsgen.runtime.blocks import blocks_to_content, blocks_to_text
from orsgen.runtime.connection import Endpoint, resolve, session_secrets
from orsgen.runtime.drift import ToolDriftError, ToolDriftWarning
from orsgen.runtime.images import Content, ContentPart, ImagePart, TextPart
from orsgen.runtime.sessions import Opened

DEFAULT_CALL_TIMEOUT = 600.0
DEFAULT_OPEN_TIMEOUT = 1800.0
_MAX_ERROR_TEXT = 500

__all__ = [
    "Content",
    "ContentPart",
    "ImagePart",
    "TextPart",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_OPEN_TIMEOUT",
    "OrsAdapter",
    "SelfScoring",
    "SessionOpenError",
    "ToolDriftError",
    "ToolDriftWarning",
    "UNSET",
    "close_all_sessions",
]


class SessionOpenError(RuntimeError):
    """``reset()`` could not open a session; TRL cannot run a rollout without a prompt."""


def _describe(exc: BaseException) -> str:
    """One line, secret-free, that says what went wrong (the root cause where the SDK wraps it)."""
    name = type(exc).__name__
    status = getattr(exc, "status", None)
    if isinstance(status, int) and name.endswith("ResponseError"):
        message = getattr(exc, "message", "") or ""
        text = f"HTTP {status}: {message}".strip().rstrip(":")
    elif name == "MaxRetriesError" and getattr(exc, "errors", None):
        text = f"gave up after {len(exc.errors)} attempts; last: {_describe(exc.errors[-1])}"  # type: ignore[attr-defined]
    elif name == "SessionTerminatedError":
        text = f"the session ended on the server ({str(exc).strip() or 'terminated'})"
    elif name == "ToolFailed":
        text = f"the tool raised on the server: {str(exc).strip()}"
    elif name in ("ClientConnectorError", "ClientOSError", "ServerDisconnectedError"):
        text = f"{name}: {str(exc).strip() or 'connection lost'} (is the server running?)"
    elif isinstance(exc, (asyncio.TimeoutError, TimeoutError)) and not str(exc).strip():
        text = "timed out"
    else:
        text = str(exc).strip() or name
        if name not in text and not isinstance(exc, (TimeoutError, RuntimeError)):
            text = f"{name}: {text}"
    text = " ".join(text.split())
    return text if len(text) <= _MAX_ERROR_TEXT else text[: _MAX_ERROR_TEXT - 3] + "..."


_live_slots: "weakref.WeakSet[_SessionSlot]" = weakref.WeakSet()
_live_lock = threading.Lock()


def close_all_sessions(timeout: float = sessions.EXIT_BUDGET) -> None:
    """Close every session this process still holds, held or prefetched, concurrently
    (run at interpreter exit)."""
    with _live_lock:
        slots = list(_live_slots)
    for slot in slots:
        slot.close(wait=False)
    stale = prefetch.clear_all() + prefetch.discard_inflight()
    if stale:
        concurrent.futures.wait(stale, timeout=timeout)
    sessions.drain(timeout)


loop.on_shutdown(close_all_sessions, priority=0)


class _SessionSlot:
    """Holds the open SDK session apart from the adapter, so a finalizer can close
    it without keeping the adapter alive."""

    def __init__(self, owner: type | None = None) -> None:
        self.session: Any = None
        self.owner = owner
        with _live_lock:
            _live_slots.add(self)

    def take(self) -> Any:
        session, self.session = self.session, None
        return session

    def close(self, wait: bool = True) -> None:
        session = self.take()
        if session is None:
            return
        if wait:
            sessions.close_now(session)
        else:
            sessions.close_later(session)


def _finalize(slot: _SessionSlot) -> None:
    slot.close(wait=False)


def _task_key(index: int | None, task_spec: Mapping[str, Any] | None) -> tuple[str, str]:
    if index is not None:
        return ("index", str(index))
    try:
        return ("spec", json.dumps(task_spec, sort_keys=True, default=repr))
    except (TypeError, ValueError):
        return ("spec-id", str(id(task_spec)))


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
        group_size: group prefetch. ``None`` (default) learns GRPO's group size from
            the resets it sees; an int fixes it (``functools.partial(Env, group_size=8)``);
            ``1`` opens every session on demand.
        prefetch: ``False`` turns group prefetch off (same as ``group_size=1``).
        keepalive: seconds between keepalive pings of an open session; ``None`` keeps
            the SDK's 10 s. Lower it for servers with a short stale-session threshold.
        strict: when the live tools differ from the snapshot, raise
            :class:`ToolDriftError` from ``reset()`` instead of warning once.
        multimodal: return images as TRL content lists with ``PIL.Image.Image`` parts
            (needs ``orsgen[vision]``); otherwise each image is a text placeholder. See
            :mod:`orsgen.runtime.images` and ``docs/vision.md``.
        env_overrides: environment variables for the environment's container, sent at
            session creation (the SDK's ``env_overrides``). Treated like secrets: never
            logged or stored.
    """

    ENV_NAME: ClassVar[str | None] = None
    DEPLOYMENT: ClassVar[str | None] = None
    DEFAULT_URL: ClassVar[str | None] = None
    DEFAULT_SPLIT: ClassVar[str] = "train"
    TOOLS_SHA256: ClassVar[str] = ""
    # (wire name, argument) of the environment's @terminal tool, hidden from the model.
    TERMINAL_TOOL: ClassVar[tuple[str, str | None] | None] = None
    # Whether the environment judges groups of candidates itself (ORS score_group).
    SUPPORTS_SCORE_GROUP: ClassVar[bool] = False
    # The SDK harness toolset every session binds (``orsgen --toolset``), or None.
    TOOLSET: ClassVar[str | None] = None
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
        group_size: int | None = None,
        prefetch: bool = True,
        keepalive: float | None = None,
        strict: bool = False,
        multimodal: bool = False,
        env_overrides: Mapping[str, str] | None = None,
    ) -> None:
        if group_size is not None and group_size < 1:
            raise ValueError(f"group_size must be at least 1, got {group_size}")
        if keepalive is not None and keepalive <= 0:
            raise ValueError(f"keepalive must be positive, got {keepalive}")
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
        self._timeout = float(timeout)
        self._open_timeout = float(open_timeout)
        self._group_size = 1 if not prefetch else group_size
        self._keepalive = keepalive
        self._strict = strict
        self._multimodal = bool(multimodal)
        if self._multimodal:
            images.require_pillow()
        self._env_overrides = _overrides(env_overrides)
        self._lock = threading.RLock()
        self._slot = _SessionSlot(type(self))
        self._finalizer = weakref.finalize(self, _finalize, self._slot)
        self._finalizer.atexit = False  # the runtime's own exit hook closes sessions in order
        self._clear_state()

    # -- state -------------------------------------------------------------------------

    def _clear_state(self) -> None:
        self._final_submitted = False
        self._task: tuple[str, str] | None = None
        self.reward = None
        self.rewards = []
        self.metadata = []
        self.finished = False
        self.last_output = ""

    def _stream_key(self) -> tuple[Any, ...]:
        """Which resets share one prefetch stream: same class, endpoint and session options."""
        cls = type(self)
        secrets = tuple(sorted((self._secrets or {}).items()))
        overrides = drift.sha256_of(
            sorted((self._env_overrides or {}).items())
        )  # no values in keys
        return (
            cls.__module__,
            cls.__qualname__,
            self._endpoint,
            self._split,
            secrets,
            overrides,
            self._keepalive,
        )

    @property
    def _prefetcher(self) -> prefetch.Prefetcher:
        return prefetch.get(self._stream_key())

    # -- TRL contract ------------------------------------------------------------------

    def reset(
        self,
        task_index: int | None = None,
        task_spec: Mapping[str, Any] | None = None,
        **row: Any,
    ) -> Content:
        """Close any previous session, open one for ``task_index`` (or ``task_spec``) and
        return the prompt: text, or with ``multimodal=True`` a TRL content list when it
        holds images. Extra dataset columns in ``row`` are accepted and ignored."""
        with self._lock:
            self._slot.close(wait=False)
            self._clear_state()
            index = None if task_spec is not None else int(task_index or 0)
            opened = self._acquire(index, task_spec)
            self._task = _task_key(index, task_spec)
            self._slot.session = opened.session
            if opened.tools is not None:
                drift.record(type(self), opened.tools, self._split, index)
            try:
                drift.enforce(type(self), self._strict, self._endpoint.label)
            except ToolDriftError:
                self._slot.close(wait=False)
                raise
            if self._multimodal:
                return blocks_to_content(opened.blocks, True)
            return opened.prompt

    def _opener(
        self, index: int | None, task_spec: Mapping[str, Any] | None
    ) -> Callable[[bool], Any]:
        endpoint, split, secrets, keepalive = (
            self._endpoint,
            self._split,
            self._secrets,
            self._keepalive,
        )
        toolset, overrides = self.TOOLSET, self._env_overrides

        def opener(fetch_tools: bool) -> Any:
            return sessions.open_session(
                endpoint,
                split,
                index,
                task_spec,
                secrets,
                keepalive,
                fetch_tools,
                toolset=toolset,
                env_overrides=overrides,
            )

        return opener

    def _acquire(self, index: int | None, task_spec: Mapping[str, Any] | None) -> Opened:
        opener = self._opener(index, task_spec)
        check = drift.claim_check(type(self))
        fut, prefetched = self._prefetcher.acquire(
            _task_key(index, task_spec), opener, self._group_size, check
        )
        try:
            return self._wait_open(fut)
        except Exception as exc:
            if not prefetched:
                raise self._open_error(index, exc) from exc
        # A prefetched session failed to open (or was cut short): try once on demand.
        try:
            return self._wait_open(prefetch.Pending(opener(False)))
        except Exception as exc:
            raise self._open_error(index, exc) from exc

    def _wait_open(self, fut: prefetch.Pending) -> Opened:
        try:
            return fut.result(timeout=self._open_timeout)
        except TimeoutError:
            raise TimeoutError(f"no session within open_timeout={self._open_timeout:g} s") from None
        except BaseException as exc:
            # concurrent.futures.CancelledError is not an Exception subclass everywhere
            if type(exc).__name__ == "CancelledError":
                raise RuntimeError("the session open was cancelled") from None
            raise

    def _open_error(self, index: int | None, exc: BaseException) -> SessionOpenError:
        which = "the given task_spec" if index is None else f"task {index}"
        return SessionOpenError(
            f"could not open an ORS session for {which} of split {self._split!r} on "
            f"{self._endpoint.label}: {_describe(exc)}"
        )

    @property
    def close(self) -> Callable[[], None]:
        """``adapter.close()`` ends the open session, and any unused prefetched sessions
        of this class. A property, not a method, so TRL never offers it to the model as
        a tool."""

        def _close() -> None:
            with self._lock:
                self._slot.close(wait=True)
            stale = self._prefetcher.clear()
            if stale:
                concurrent.futures.wait(stale, timeout=sessions.CLOSE_WAIT)
            sessions.drain(sessions.CLOSE_WAIT)

        return _close

    @classmethod
    def close_all(cls) -> None:
        """Close the sessions of every instance of this class in this process, and its
        unused prefetched sessions.

        TRL never closes the environments it pools; call ``MyEnv.close_all()`` after
        ``trainer.train()``. A classmethod, which TRL does not offer as a tool."""
        with _live_lock:
            slots = [s for s in _live_slots if s.owner is not None and issubclass(s.owner, cls)]
        for slot in slots:
            slot.close(wait=False)
        family, todo = set(), [cls]
        while todo:
            klass = todo.pop()
            family.add((klass.__module__, klass.__qualname__))
            todo += klass.__subclasses__()
        stale = prefetch.clear_all(lambda key: isinstance(key, tuple) and key[:2] in family)
        if stale:
            concurrent.futures.wait(stale, timeout=sessions.CLOSE_WAIT)
        sessions.drain(sessions.CLOSE_WAIT)

    # -- tool calls --------------------------------------------------------------------

    def _record(self, text: str, reward: float | None, metadata: dict[str, Any] | None) -> str:
        self.rewards.append(reward)
        self.metadata.append(metadata)
        if reward is not None:
            self.reward = reward
        self.last_output = text
        return text

    def _fail(self, message: str) -> str:
        return self._record(f"Error: {message}", None, None)

    def _finish_call(self, wire_name: str, out: Any) -> Content:
        reward: float | None = None
        if out.reward is not None:
            try:
                reward = float(out.reward)
            except (TypeError, ValueError):
                reward = None
        if out.finished:
            self.finished = True
        meta = dict(out.metadata) if isinstance(out.metadata, Mapping) else None
        blocks = list(out.blocks or [])
        text = self._record(blocks_to_text(blocks) or "(no output)", reward, meta)
        if self._multimodal:  # a content list when an image survived decoding, else str
            return blocks_to_content(blocks, True) or text
        return text

    def _submit_final(self, message: str) -> str | None:
        """Feed the rollout's final assistant message to the terminal tool, once, unless
        the episode already finished. Returns the tool's text, or ``None`` when nothing
        was sent."""
        terminal = self.TERMINAL_TOOL
        with self._lock:
            if terminal is None or self._final_submitted or self.finished:
                return None
            self._final_submitted = True
        name, arg = terminal
        self._call(name, {} if arg is None else {arg: message})
        return self.last_output

    @property
    def _group_key(self) -> tuple[Any, ...] | None:
        """Rollouts with equal keys are one GRPO group: same class, server, split and task."""
        if self._task is None or self._slot.session is None:
            return None
        return (type(self), self._endpoint, self._split, self._task)

    def _score_group(self, answers: list[str]) -> list[float] | None:
        """Ask this session's environment to judge a group's final answers (ORS
        ``score_group``); ``None`` when it cannot (unsupported, no session, failure)."""
        session = self._slot.session
        if not self.SUPPORTS_SCORE_GROUP or session is None or not answers:
            return None
        from openreward.api.environments.types import Message, TextBlock

        candidates = [[Message(role="assistant", blocks=[TextBlock(text=a)])] for a in answers]
        try:
            scores = loop.run(session.score_group(candidates), timeout=self._timeout)
            rewards = [float(s.reward) for s in scores]
        except Exception as exc:  # noqa: BLE001 - a judge failure means "no score"
            warnings.warn(
                f"score_group on {self._endpoint.label} failed: {_describe(exc)}", stacklevel=3
            )
            return None
        return rewards if len(rewards) == len(answers) else None

    def _call_error(self, wire_name: str, exc: BaseException) -> str:
        if isinstance(exc, TimeoutError) and str(exc).startswith("no answer within"):
            return self._fail(
                f"tool {wire_name!r} got no answer within {self._timeout:g} s from "
                f"{self._endpoint.label}"
            )
        return self._fail(f"tool {wire_name!r} failed: {_describe(exc)}")

    def _call(self, wire_name: str, arguments: dict[str, Any]) -> Content:
        """Call a tool by its wire name. Never raises: failures come back as ``Error: ...``."""
        with self._lock:
            session = self._slot.session
            if session is None:
                return self._fail(f"no open session for tool {wire_name!r}; call reset() first")
            dead = getattr(session, "_dead_exception", None)
            if dead is not None:  # the SDK already knows; skip a doomed request
                return self._call_error(wire_name, dead)
            try:
                out = loop.run(session.call_tool(wire_name, arguments), timeout=self._timeout)
            except Exception as exc:  # noqa: BLE001 - the trainer must never see a raise
                return self._call_error(wire_name, exc)
            return self._finish_call(wire_name, out)

    async def _acall(self, wire_name: str, arguments: dict[str, Any]) -> Content:
        """The awaitable twin of :meth:`_call`, for ``async def`` tool methods (which
        AsyncGRPOTrainer awaits on its own loop). The request runs on the runtime loop;
        the caller's loop only waits for it. Never raises."""
        session = self._slot.session
        if session is None:
            return self._fail(f"no open session for tool {wire_name!r}; call reset() first")
        fut = loop.submit(session.call_tool(wire_name, arguments))
        try:
            out = await asyncio.wait_for(asyncio.wrap_future(fut), timeout=self._timeout)
        except asyncio.TimeoutError:
            fut.cancel()
            return self._call_error(wire_name, TimeoutError("no answer within"))
        except Exception as exc:  # noqa: BLE001
            return self._call_error(wire_name, exc)
        with self._lock:
            return self._finish_call(wire_name, out)


class _Overrides(dict[str, str]):
    """``env_overrides`` whose repr shows names only, so no log or traceback holds a value."""

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: '<hidden>'" for k in self) + "}"


def _overrides(values: Mapping[str, str] | None) -> dict[str, str] | None:
    """A private copy of ``env_overrides``; a bad entry is named by its key, never its value."""
    if not values:
        return None
    out = _Overrides()
    for key, value in values.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"env_overrides[{key!r}] must map a str name to a str value")
        out[key] = value
    return out


class SelfScoring:
    """Mixin for an adapter that reports its own outcome reward through ``get_reward()``.

    TRL's AsyncGRPO rollout loop calls reward functions without ``environments`` and
    returns an environment to its pool before the group is scored, so ``outcome_reward``
    cannot score there; it calls ``get_reward()`` as each rollout finishes instead. Use the
    generated ``Scored<Env>`` class with ``reward_funcs=[]`` (GRPOTrainer accepts it too);
    do not also pass ``outcome_reward``, or the reward counts twice.
    """

    def get_reward(self) -> float | None:
        """The rollout's last non-null reward, or ``None`` when it was never scored."""
        from orsgen.runtime.rewards import outcome_reward

        return outcome_reward([self])[0]


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

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
import os
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, ClassVar, NoReturn

from orsgen.canonical import sha256_of
from orsgen.jsonobject import is_object
from orsgen.runtime import drift, images, keepalive, metrics, outage, prefetch, sessions
from orsgen.runtime.blocks import blocks_to_content, blocks_to_text
from orsgen.runtime.connection import Endpoint, resolve, session_secrets
from orsgen.runtime.drift import ToolDriftError, ToolDriftWarning
from orsgen.runtime.errors import (
    CallTimeout,
    EnvironmentUnavailableError,
    OrsRuntimeError,
    ServerNotConfiguredError,
    SessionOpenError,
    ToolCallFailure,
    ToolEnvironmentError,
    ToolInputError,
    tool_failure,
)
from orsgen.runtime.errors import describe as _describe
from orsgen.runtime.episode import Outcome
from orsgen.runtime.tracking import RolloutBook, Settings
from orsgen.runtime.images import Content, ContentPart, ImageLike, ImagePart, TextPart
from orsgen.runtime.process import EXIT_BUDGET, current
from orsgen.runtime.rewards import Rollout
from orsgen.runtime.sessions import Opened, SessionSlot

DEFAULT_CALL_TIMEOUT = 600.0
DEFAULT_OPEN_TIMEOUT = 1800.0

__all__ = [
    "Content",
    "ContentPart",
    "ImageLike",
    "ImagePart",
    "TextPart",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_OPEN_TIMEOUT",
    "OrsAdapter",
    "OrsRuntimeError",
    "SelfScoring",
    "ServerNotConfiguredError",
    "SessionOpenError",
    "ToolDriftError",
    "ToolDriftWarning",
    "UNSET",
    "close_all_sessions",
]


# What reset() returns for a degraded rollout: short, and says why nothing works.
UNAVAILABLE_PROMPT = "(The environment is unavailable right now. This episode is not scored.)"


def _open_sessions() -> int:
    return sum(1 for slot in current().held() if slot.session is not None)


metrics.accumulator.open_sessions = _open_sessions


def close_all_sessions(timeout: float = EXIT_BUDGET) -> None:
    """Close every session this process still holds, held or prefetched, concurrently
    (also done at interpreter exit)."""
    current().close_sessions(timeout)


def _finalize(slot: SessionSlot) -> None:
    slot.close(wait=False)


def _task_key(index: int | None, task_spec: Mapping[str, Any] | None) -> tuple[str, str]:
    if index is not None:
        return ("index", str(index))
    try:
        return ("spec", json.dumps(task_spec, sort_keys=True, default=repr))
    except (TypeError, ValueError):
        return ("spec-id", str(id(task_spec)))


def _check_settings(group_size: int | None, keepalive: float | None, reconnect_for: float) -> None:
    """Reject constructor settings that no session could honour."""
    if group_size is not None and group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}")
    if keepalive is not None and keepalive <= 0:
        raise ValueError(f"keepalive must be positive, got {keepalive}")
    if reconnect_for < 0:
        raise ValueError(f"reconnect_for must be non-negative, got {reconnect_for}")


class OrsAdapter:
    """Base class of generated ORS adapters. Construct freely: no network I/O happens
    until :meth:`reset`.

    Args:
        base_url: URL of a single-host ORS server. Defaults to ``OPENREWARD_SESSION_URL``,
            then the URL recorded in the snapshot; a catalog package defaults to the
            platform. With none of these (a package generated from a local file),
            ``reset()`` raises :class:`ServerNotConfiguredError`.
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
        seed: the order in which a reset that gets no task (``train_dataset=None``) walks
            the split; defaults to the trainer's ``args.seed`` (GRPOTrainer), else 0.
        num_tasks: with ``train_dataset=None``, choose among the split's first ``num_tasks``.
        indices: with ``train_dataset=None``, choose among exactly these task indices.
        unfinished_reward: the reward of a rollout whose session worked but that never got a
            score (``None``: unscored). Infrastructure and grader failures stay ``None``.
        trajectories: a JSON-lines file that gets one record per rollout (one file per
            process); ``None`` (default) writes nothing.
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
        reconnect_for: float = outage.DEFAULT_RECONNECT_FOR,
        multimodal: bool = False,
        env_overrides: Mapping[str, str] | None = None,
        seed: int | None = None,
        num_tasks: int | None = None,
        indices: Sequence[int] | None = None,
        unfinished_reward: float | None = None,
        trajectories: str | os.PathLike[str] | None = None,
    ) -> None:
        _check_settings(group_size, keepalive, reconnect_for)
        settings = Settings.of(
            seed, num_tasks, indices, group_size, unfinished_reward, trajectories
        )
        self._book = RolloutBook(settings, open_timeout)
        self._no_server: ServerNotConfiguredError | None = None
        self._endpoint = self._resolve_endpoint(base_url, api_key, env_name, deployment)
        self._secrets = session_secrets(self._endpoint, secrets)
        self._split = split or self.DEFAULT_SPLIT
        self._timeout = float(timeout)
        self._open_timeout = float(open_timeout)
        self._group_size = 1 if not prefetch else group_size
        self._keepalive = keepalive
        self._strict = strict
        self._reconnect_for = float(reconnect_for)
        self._multimodal = bool(multimodal)
        if self._multimodal:
            images.require_pillow()
        self._env_overrides = _overrides(env_overrides)
        self._lock = threading.RLock()
        self._slot = SessionSlot(type(self))
        self._finalizer = weakref.finalize(self, _finalize, self._slot)
        self._finalizer.atexit = False  # the runtime's exit shutdown closes sessions in order
        self._clear_state()

    def _resolve_endpoint(
        self,
        base_url: str | None,
        api_key: str | None,
        env_name: str | None,
        deployment: str | None,
    ) -> Endpoint:
        """Where sessions go. No server configured is reported by reset(), not here
        (``_no_server``): TRL constructs one instance only to read the tool schemas."""
        try:
            return resolve(
                base_url=base_url,
                api_key=api_key,
                env_name=env_name,
                deployment=deployment if deployment is not None else self.DEPLOYMENT,
                default_url=self.DEFAULT_URL,
                default_env_name=self.ENV_NAME,
            )
        except ServerNotConfiguredError as exc:
            self._no_server = exc
            return Endpoint("", "", env_name or self.ENV_NAME, None)

    # -- state -------------------------------------------------------------------------

    def _clear_state(self) -> None:
        self._final_submitted = False
        self._call_finished = False
        self._task: tuple[str, str] | None = None
        self.reward = None
        self.rewards = []
        self.metadata = []
        self.finished = False
        self.last_output = ""
        # The rollout cannot be scored: its session was lost, or it ran degraded.
        self._void = False

    def _stream_key(self) -> tuple[Any, ...]:
        """Which resets share one prefetch stream: same class, endpoint and session options."""
        cls = type(self)
        secrets = tuple(sorted((self._secrets or {}).items()))
        # Hashed: the stream key holds no override values.
        overrides = sha256_of(sorted((self._env_overrides or {}).items()))
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
        return prefetch.get(self._stream_key(), type(self))

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
        if self._no_server is not None:
            raise ServerNotConfiguredError(f"{type(self).__name__}: {self._no_server}")
        with self._lock:
            self._book.write(type(self).__name__, self._split, self.rewards, self.finished)
            self._slot.close(wait=False)
            self._clear_state()
            chosen = task_index is None and task_spec is None
            if chosen:
                task_index = self._book.choose(type(self), self._endpoint, self._split)
            index = None if task_spec is not None else int(task_index or 0)
            self._book.begin(index, task_spec is not None, chosen)
            started = time.monotonic()
            opened = self._open_riding_out(index, task_spec)
            self._book.reset_took(time.monotonic() - started)
            if opened is None:
                self._degrade()
                return UNAVAILABLE_PROMPT
            self._task = _task_key(index, task_spec)
            self._slot.hold(opened.session)
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

    def _open_riding_out(
        self, index: int | None, task_spec: Mapping[str, Any] | None
    ) -> Opened | None:
        """Open a session, waiting for a server that went away (up to ``reconnect_for``
        after it did). ``None``: the window passed, the rollout runs degraded."""
        server = outage.server(self._endpoint.session_url)
        if server.down and server.reached and not self._wait_back(server, None):
            self._raise_if_strict(index, None)  # a known outage: skip the SDK's retries
            return None
        while True:
            try:
                opened = self._acquire(index, task_spec)
            except SessionOpenError as err:
                cause = err.__cause__
                # A server this process never reached fails at once: a wrong URL shows now.
                if cause is None or not outage.unreachable(cause) or not server.reached:
                    raise
                if not self._wait_back(server, cause):
                    self._raise_if_strict(index, err)
                    return None
                continue
            server.answered()
            return opened

    def _window_end(self, server: outage.Server) -> float:
        return (server.down_since or time.monotonic()) + self._reconnect_for

    def _wait_back(
        self, server: outage.Server, cause: BaseException | None, until: float | None = None
    ) -> bool:
        """Wait until the server answers again, or the window since it went away (or
        ``until``) ends."""
        if self._reconnect_for <= 0:
            return False
        if cause is not None:
            server.away(cause)
        deadline = (
            self._window_end(server) if until is None else min(until, self._window_end(server))
        )
        budget = max(0.0, deadline - time.monotonic()) + outage.PROBE_TIMEOUT + 5.0
        try:
            return current().run(outage.wait_until_back(server, deadline), timeout=budget)
        except TimeoutError:
            return False

    def _raise_if_strict(self, index: int | None, err: SessionOpenError | None) -> None:
        """The window passed: ``strict=True`` raises rather than degrading the rollout."""
        if self._strict:
            which = "the given task_spec" if index is None else f"task {index}"
            last = f"; last: {_describe(err.__cause__)}" if err and err.__cause__ else ""
            raise EnvironmentUnavailableError(
                f"could not open an ORS session for {which} of split {self._split!r} on "
                f"{self._endpoint.label}: the server did not answer within "
                f"reconnect_for={self._reconnect_for:g} s (strict=True){last}"
            ) from err
        return None

    def _degrade(self) -> None:
        """Run the rest of this rollout without an environment: its tools answer
        ``Error: environment unavailable`` and it gets no reward. Counted once."""
        if self._void:
            return
        self._void = self.finished = True
        self._book.void("unavailable")
        current().count_degraded(type(self))
        outage.server(self._endpoint.session_url).degrade(self._reconnect_for)

    @classmethod
    def degraded_rollouts(cls) -> int:
        """How many rollouts of this class (and its subclasses) ran degraded in this process
        because the server stayed away past ``reconnect_for``. A classmethod, which TRL
        does not offer as a tool."""
        return current().degraded(cls)

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
            current().drain(sessions.CLOSE_WAIT)

        return _close

    @classmethod
    def close_all(cls) -> None:
        """Close the sessions of every instance of this class in this process, and its
        unused prefetched sessions.

        TRL never closes the environments it pools; call ``MyEnv.close_all()`` after
        ``trainer.train()``. A classmethod, which TRL does not offer as a tool."""
        current().close_sessions(sessions.CLOSE_WAIT, of=lambda klass: issubclass(klass, cls))

    # -- tool calls --------------------------------------------------------------------

    def _record(self, text: str, reward: float | None, metadata: dict[str, Any] | None) -> str:
        self.rewards.append(reward)
        self.metadata.append(metadata)
        if reward is not None:
            self.reward = reward
        self.last_output = text
        return text

    def _fail(self, message: str) -> NoReturn:
        """A call the model got wrong before anything was sent (client-side validation,
        called by generated methods): recorded, then raised so that TRL counts it."""
        method = sys._getframe(1).f_code.co_name  # pyright: ignore[reportPrivateUsage]
        wire = self.WIRE_NAMES.get(method, (method, {}))[0]
        self._raise(wire, {}, ToolInputError(wire, "invalid_arguments", message), time.monotonic())

    def _raise(
        self, wire_name: str, arguments: dict[str, Any], failure: ToolCallFailure, start: float
    ) -> NoReturn:
        """Record a failed call (reward ``None``) and raise it: TRL counts it and gives the
        model ``{"error": str(failure)}``."""
        self._record(f"Error: {failure}", None, None)
        self._book.failed(wire_name, arguments, failure, time.monotonic() - start)
        raise failure

    def _settle(
        self,
        wire_name: str,
        arguments: dict[str, Any],
        result: Content | ToolCallFailure,
        start: float,
    ) -> Content:
        """Record a call's result in the rollout; a failure raises (:meth:`_raise`)."""
        if isinstance(result, ToolCallFailure):
            self._raise(wire_name, arguments, result, start)
        reward = self.rewards[-1] if self.rewards else None
        seconds = time.monotonic() - start
        self._book.called(
            wire_name, arguments, self.last_output, reward, self._call_finished, seconds
        )
        return result

    def _finish_call(self, wire_name: str, out: Any) -> Content:
        reward: float | None = None
        if out.reward is not None:
            try:
                reward = float(out.reward)
            except (TypeError, ValueError):
                reward = None
        self._call_finished = bool(out.finished)
        if out.finished:
            self.finished = True
        meta = dict(out.metadata) if is_object(out.metadata) else None
        blocks = list(out.blocks or [])
        text = self._record(blocks_to_text(blocks) or "(no output)", reward, meta)
        if self._multimodal:  # a content list when an image survived decoding, else str
            return blocks_to_content(blocks, True) or text
        return text

    def _call_error(self, wire_name: str, exc: BaseException) -> ToolCallFailure:
        if isinstance(exc, CallTimeout):
            return ToolEnvironmentError(
                wire_name,
                "timeout",
                f"no answer within {self._timeout:g} s from {self._endpoint.label}",
            )
        return tool_failure(wire_name, exc)

    def _no_session(self, wire_name: str) -> ToolCallFailure:
        if self._void:
            return ToolEnvironmentError(
                wire_name, "unavailable", "environment unavailable; this episode is not scored"
            )
        return ToolEnvironmentError(wire_name, "no_session", "no open session; call reset() first")

    def _call(self, wire_name: str, arguments: dict[str, Any]) -> Content:
        """Call a tool by its wire name. A failure raises :class:`ToolCallFailure`
        (:class:`ToolInputError` for the model's mistakes, :class:`ToolEnvironmentError`
        for the environment's), which TRL catches and counts."""
        start = time.monotonic()
        with self._lock:
            return self._settle(wire_name, arguments, self._call_once(wire_name, arguments), start)

    def _call_once(self, wire_name: str, arguments: dict[str, Any]) -> Content | ToolCallFailure:
        with self._lock:
            session = self._slot.session
            if session is None:
                return self._no_session(wire_name)
            if getattr(session, "lost", False):
                return self._lost(wire_name)
            dead = getattr(session, "_dead_exception", None)
            if dead is not None:  # the SDK already knows; skip a doomed request
                return self._call_error(wire_name, dead)
            server = outage.server(self._endpoint.session_url)
            until = time.monotonic() + self._timeout
            while True:
                try:
                    left = max(until - time.monotonic(), 0.001)
                    out = current().run(session.call_tool(wire_name, arguments), timeout=left)
                except Exception as exc:  # noqa: BLE001 - the trainer must never see a raise
                    if outage.is_lost(exc):
                        server.answered()
                        keepalive.mark_lost(session, exc)
                        return self._lost(wire_name)
                    if not outage.never_sent(exc):  # it may have run: never sent twice
                        if outage.unreachable(exc):
                            server.away(exc)
                        return self._call_error(wire_name, exc)
                    if self._wait_back(server, exc, until):
                        continue  # it never reached the server: safe to send once it answers
                    if time.monotonic() < self._window_end(server):
                        return self._call_error(wire_name, CallTimeout("no answer in time"))
                    self._degrade()
                    return self._no_session(wire_name)
                server.answered()
                return self._finish_call(wire_name, out)

    def _lost(self, wire_name: str) -> ToolCallFailure:
        """The server no longer knows this session: the episode is over, unscored."""
        self._void = self.finished = True
        self._book.void("lost_session")
        return ToolEnvironmentError(
            wire_name,
            "lost_session",
            f"HTTP 404: {outage.LOST_SESSION_TEXT} (the server restarted, or reaped the "
            "session); the episode ends unscored",
        )

    async def _acall(self, wire_name: str, arguments: dict[str, Any]) -> Content:
        """The awaitable twin of :meth:`_call`, for ``async def`` tool methods (which
        AsyncGRPOTrainer awaits on its own loop). The request runs on the runtime loop;
        the caller's loop only waits for it. Raises as :meth:`_call` does. (It does not wait
        out an outage: a refused connection comes back as an error at once.)"""
        start = time.monotonic()
        result = await self._acall_once(wire_name, arguments)
        with self._lock:
            return self._settle(wire_name, arguments, result, start)

    async def _acall_once(
        self, wire_name: str, arguments: dict[str, Any]
    ) -> Content | ToolCallFailure:
        session = self._slot.session
        if session is None:
            return self._no_session(wire_name)
        if getattr(session, "lost", False):
            return self._lost(wire_name)
        fut = current().submit(session.call_tool(wire_name, arguments))
        try:
            out = await asyncio.wait_for(asyncio.wrap_future(fut), timeout=self._timeout)
        except asyncio.TimeoutError:
            fut.cancel()
            return self._call_error(wire_name, CallTimeout("no answer in time"))
        except Exception as exc:  # noqa: BLE001
            if outage.is_lost(exc):
                keepalive.mark_lost(session, exc)
                return self._lost(wire_name)
            return self._call_error(wire_name, exc)
        with self._lock:
            return self._finish_call(wire_name, out)

    # -- rewards -----------------------------------------------------------------------

    @property
    def rollout(self) -> Rollout:
        """This rollout as the reward functions read it (:class:`orsgen.runtime.rewards.Rollout`).
        A property, not a method, so TRL never offers it to the model as a tool."""
        return OrsAdapter._Rollout(self)

    class _Rollout:
        """The adapter's side of :class:`~orsgen.runtime.rewards.Rollout`; nested in the
        adapter because it reads the adapter's private rollout state."""

        __slots__ = ("_env",)

        def __init__(self, env: OrsAdapter) -> None:
            self._env = env

        @property
        def rewards(self) -> list[float | None]:
            return self._env.rewards

        @property
        def scorable(self) -> bool:
            return not self._env._void

        def outcome(self) -> Outcome:
            """How the rollout ended, with ``unfinished_reward`` applied."""
            return self._env._book.outcome(self._env.rewards)

        def settle(self) -> Outcome:
            """The outcome, counted once in the process's metrics and written once to the
            trajectory log (when configured)."""
            env = self._env
            with env._lock:
                outcome = env._book.count(env.rewards, env.finished)
                env._book.write(type(env).__name__, env._split, env.rewards, env.finished)
                return outcome

        @property
        def takes_final_answer(self) -> bool:
            return self._env.TERMINAL_TOOL is not None

        def submit_final(self, message: str) -> str | None:
            """Feed the rollout's final assistant message to the terminal tool, once, unless
            the episode already finished. Returns the tool's text, or ``None`` when nothing
            was sent."""
            env, terminal = self._env, self._env.TERMINAL_TOOL
            with env._lock:
                if terminal is None or env._final_submitted or env.finished:
                    return None
                env._final_submitted = True
            name, arg = terminal
            try:
                env._call(name, {} if arg is None else {arg: message})
            except ToolCallFailure:
                pass  # recorded in the rollout: it stays unscored
            return env.last_output

        @property
        def group(self) -> Hashable | None:
            """Rollouts with equal keys are one GRPO group: same class, server, split and
            task. ``None`` when the environment does not judge groups."""
            env = self._env
            if not env.SUPPORTS_SCORE_GROUP or env._task is None or env._slot.session is None:
                return None
            return (type(env), env._endpoint, env._split, env._task)

        def score_group(self, answers: list[str]) -> list[float] | None:
            """Ask this session's environment to judge a group's final answers (ORS
            ``score_group``); ``None`` when it cannot (unsupported, no session, failure)."""
            env, session = self._env, self._env._slot.session
            if not env.SUPPORTS_SCORE_GROUP or session is None or not answers:
                return None
            from openreward.api.environments.types import (  # type: ignore[import-untyped]
                Message,
                TextBlock,
            )

            candidates = [[Message(role="assistant", blocks=[TextBlock(text=a)])] for a in answers]
            try:
                scores = current().run(session.score_group(candidates), timeout=env._timeout)
                rewards = [float(s.reward) for s in scores]
            except Exception as exc:  # noqa: BLE001 - a judge failure means "no score"
                warnings.warn(
                    f"score_group on {env._endpoint.label} failed: {_describe(exc)}", stacklevel=3
                )
                return None
            return rewards if len(rewards) == len(answers) else None


class _Overrides(dict[str, str]):
    """``env_overrides`` whose repr shows names only, so no log or traceback holds a value."""

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: '<hidden>'" for k in self) + "}"


def _overrides(values: Mapping[str, str] | None) -> dict[str, str] | None:
    """A private copy of ``env_overrides``; a bad entry is named by its key, never its value."""
    if not values:
        return None
    out = _Overrides()
    # Typed as objects: callers without a type checker may pass anything.
    items: list[tuple[object, object]] = list(values.items())
    for key, value in items:
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"env_overrides[{key!r}] must map a str name to a str value")
        out[key] = value
    return out


class SelfScoring(OrsAdapter):
    """An adapter that reports its own outcome reward through ``get_reward()``.

    TRL's AsyncGRPO rollout loop calls reward functions without ``environments`` and
    returns an environment to its pool before the group is scored, so ``outcome_reward``
    cannot score there; it calls ``get_reward()`` as each rollout finishes instead. Use the
    generated ``Scored<Env>`` class with ``reward_funcs=[]`` (GRPOTrainer accepts it too);
    do not also pass ``outcome_reward``, or the reward counts twice.
    """

    def get_reward(self) -> float | None:
        """The rollout's last non-null reward; ``unfinished_reward`` when the session
        worked but nothing scored; ``None`` after an infrastructure or grader failure.
        In AsyncGRPO's rollout child it also sends the process's ``ors/*`` metrics to
        the trainer's log (:func:`orsgen.runtime.metrics.push_to_worker`)."""
        outcome = self.rollout.settle()
        metrics.push_to_worker()
        return outcome.reward


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

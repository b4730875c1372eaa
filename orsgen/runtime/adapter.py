"""The base class every generated adapter stands on.

A generated adapter subclasses :class:`OrsAdapter` and adds one typed public
method per ORS tool. TRL turns every public *function* of the class into a tool
(except ``reset`` and ``get_reward``), so this base defines no other public
function: its helpers are private and ``close`` is a property.

Training-scale behaviour (see ``docs/runtime.md``):

- one request per tool call: the environment is addressed by name, so no call
  pays for the server's redirect;
- group prefetch: GRPO's G consecutive resets of one task open their sessions
  concurrently (:mod:`orsgen.runtime.pool`);
- picklable and thread-safe: the class (or a ``functools.partial`` of it) is the
  factory, instances hold a lock, and all I/O runs on one loop per process;
- no leaks: sessions close on ``reset()``, ``close()``, garbage collection and exit;
- bounded time: every call has a timeout; a failed call raises (TRL counts it);
- outages: one call policy (:mod:`orsgen.runtime.health`) waits, retries, degrades or fails;
- the drift guard: the first session per class and process checks the live tools
  against the snapshot (:mod:`orsgen.runtime.drift`).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from orsgen.runtime import drift, health, images, metrics, places, pool
from orsgen.runtime.blocks import blocks_to_content
from orsgen.runtime.drift import ToolDriftError, ToolDriftWarning
from orsgen.runtime.endpoint import session_secrets
from orsgen.runtime.errors import (
    OrsRuntimeError,
    ServerNotConfiguredError,
    SessionOpenError,
    ToolCallFailure,
)
from orsgen.runtime.health import Action
from orsgen.runtime.images import Content, ContentPart, ImageLike, ImagePart, TextPart
from orsgen.runtime.opening import SessionOptions, resolve_servers
from orsgen.runtime.options import UNSET, check_limits, check_settings, overrides, task_key
from orsgen.runtime.pool import EXIT_BUDGET, SessionSlot
from orsgen.runtime.process import current
from orsgen.runtime.rollout import RolloutState
from orsgen.runtime.tracking import RolloutBook, Settings

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


def close_all_sessions(timeout: float = EXIT_BUDGET) -> None:
    """Close every session this process still holds, held or prefetched, concurrently
    (also done at interpreter exit)."""
    pool.close_sessions(timeout)


def _finalize(slot: SessionSlot) -> None:
    slot.close(wait=False)


class OrsAdapter(RolloutState):
    """Base class of generated ORS adapters. Construct freely: no network I/O happens
    until :meth:`reset`.

    Args:
        base_url: URL of a single-host ORS server, or a sequence of URLs of servers of the
            same environment (each session goes to the one with the fewest open sessions).
            Defaults to ``OPENREWARD_SESSION_URL``, then the URL recorded in the snapshot; a
            catalog package defaults to the platform. With none of these (a package
            generated from a local file), ``reset()`` raises :class:`ServerNotConfiguredError`.
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
        max_sessions: at most this many sessions of the class open in this process at once
            (prefetched ones included); a reset waits for a place within ``reconnect_for``.
        rollout_timeout: seconds from ``reset()``'s open session after which tool calls
            end the episode, unfinished, without a round trip.
        seed, num_tasks, indices, unfinished_reward, trajectories: task choice for
            ``train_dataset=None``, the unfinished-rollout reward and the trajectory log
            (:class:`orsgen.runtime.tracking.Settings`, ``docs/runtime.md``).
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
        base_url: str | Sequence[str] | None = None,
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
        reconnect_for: float = health.DEFAULT_RECONNECT_FOR,
        multimodal: bool = False,
        env_overrides: Mapping[str, str] | None = None,
        max_sessions: int | None = None,
        rollout_timeout: float | None = None,
        seed: int | None = None,
        num_tasks: int | None = None,
        indices: Sequence[int] | None = None,
        unfinished_reward: float | None = None,
        trajectories: str | os.PathLike[str] | None = None,
    ) -> None:
        check_settings(group_size, keepalive, reconnect_for)
        check_limits(max_sessions, rollout_timeout)
        settings = Settings.of(
            seed, num_tasks, indices, group_size, unfinished_reward, trajectories
        )
        self._book = RolloutBook(settings, open_timeout)
        defaults = (self.DEPLOYMENT, self.DEFAULT_URL, self.ENV_NAME)
        servers, self._no_server = resolve_servers(
            base_url, api_key, env_name, deployment, defaults
        )
        self._endpoint = servers[0]  # then the server of the rollout's session
        self._max_sessions, self._rollout_timeout = max_sessions, rollout_timeout
        self._split = self._default_split = split or self.DEFAULT_SPLIT
        self._timeout = float(timeout)
        self._strict = strict
        self._multimodal = bool(multimodal)
        if self._multimodal:
            images.require_pillow()
        self._sessions = SessionOptions(
            endpoint=self._endpoint,
            split=self._split,
            secrets=session_secrets(self._endpoint, secrets),
            keepalive=keepalive,
            toolset=self.TOOLSET,
            env_overrides=overrides(env_overrides),
            group_size=1 if not prefetch else group_size,
            open_timeout=float(open_timeout),
            reconnect_for=float(reconnect_for),
            strict=strict,
            servers=servers,
            max_sessions=max_sessions,
        )
        self._here = self._sessions  # the options on the rollout's server
        places.of(type(self)).adopt(self)
        self._lock = threading.RLock()
        self._slot = SessionSlot(type(self))
        self._finalizer = weakref.finalize(self, _finalize, self._slot)
        self._finalizer.atexit = False  # the runtime's exit shutdown closes sessions in order
        self._clear_state()

    @property
    def _prefetcher(self) -> pool.Prefetcher:
        return self._sessions.prefetcher(type(self))

    # -- TRL contract ------------------------------------------------------------------

    def reset(
        self,
        task_index: int | None = None,
        task_spec: Mapping[str, Any] | None = None,
        split: str | None = None,
        **row: Any,
    ) -> Content:
        """Close any previous session, open one for ``task_index`` (or ``task_spec``) of
        ``split`` (a ``load_tasks`` row carries its own; ``None``: the adapter's ``split=``)
        and return the prompt: text, or with ``multimodal=True`` a TRL content list when it
        holds images. Extra dataset columns in ``row`` are accepted and ignored."""
        if self._no_server is not None:
            raise ServerNotConfiguredError(f"{type(self).__name__}: {self._no_server}")
        with self._lock:
            self._slot.close(wait=False)
            self._split = split or self._default_split
            if self._sessions.split != self._split:  # the stream key holds the split
                self._sessions = dataclasses.replace(self._sessions, split=self._split)
            self._here, self._endpoint = self._sessions, self._sessions.endpoint  # until placed
            index = self._begin(task_index, task_spec)  # with neither, a task chosen here
            started = time.monotonic()
            opened = self._sessions.open(type(self), index, task_spec)
            self._book.reset_took(time.monotonic() - started)
            if opened is None:
                self._degrade()
                return UNAVAILABLE_PROMPT
            self._here = self._sessions.at(opened.endpoint)
            self._endpoint, url = self._here.endpoint, self._here.endpoint.session_url
            self._task = task_key(index, task_spec)
            self._slot.hold(opened.session, opened.place)
            if opened.tools is not None:
                drift.record(type(self), opened.tools, self._split, index, url)
            try:
                drift.enforce(type(self), self._strict, self._endpoint.label, url)
            except ToolDriftError:
                self._slot.close(wait=False)
                raise
            self._start_clock()
            if self._multimodal:
                return blocks_to_content(opened.blocks, True)
            return opened.prompt

    def _degrade(self) -> None:
        """Run the rest of this rollout without an environment: its tools answer
        ``Error: environment unavailable`` and it gets no reward. Counted once, in the
        server's health record."""
        if self._void:
            return
        self._void = self.finished = True
        self._book.void("unavailable")
        reconnect_for = self._sessions.reconnect_for
        health.record(self._endpoint.session_url).degrade(type(self), reconnect_for)

    @classmethod
    def degraded_rollouts(cls) -> int:
        """How many rollouts of this class (and its subclasses) ran degraded in this process
        because the server stayed away past ``reconnect_for``. A classmethod, which TRL
        does not offer as a tool."""
        return health.degraded(cls)

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
                concurrent.futures.wait(stale, timeout=pool.CLOSE_WAIT)
            pool.drain(pool.CLOSE_WAIT)

        return _close

    @classmethod
    def close_all(cls) -> None:
        """Close the sessions of every instance of this class in this process, and its
        unused prefetched sessions.

        TRL never closes the environments it pools; call ``MyEnv.close_all()`` after
        ``trainer.train()``. A classmethod, which TRL does not offer as a tool."""
        pool.close_sessions(pool.CLOSE_WAIT, of=lambda klass: issubclass(klass, cls))

    # -- tool calls --------------------------------------------------------------------

    def _call_once(self, wire_name: str, arguments: dict[str, Any]) -> Content | ToolCallFailure:
        """Call a tool by its wire name; a failure is returned (``_call`` raises it)."""
        with self._lock:
            left = self._time_left()
            session = self._slot.session
            if session is None:
                return self._no_session(wire_name)
            if session.lost:
                return self._lost(wire_name)
            if session.dead_error is not None:  # the SDK already knows; skip a doomed request
                return self._call_error(wire_name, session.dead_error)
            budget = self._timeout if left is None else min(self._timeout, left)
            policy, until = self._here.policy(), time.monotonic() + budget
            while True:
                try:
                    left = max(until - time.monotonic(), 0.001)
                    out = current().run(session.call_tool(wire_name, arguments), timeout=left)
                except Exception as exc:  # noqa: BLE001 - the policy decides; _call raises
                    action = policy.call_failed(exc, until)
                    if action is Action.RETRY:
                        continue
                    return self._gave_up(wire_name, session, exc, action)
                policy.succeeded()
                text = self._finish_call(wire_name, out)
                self._release_if_over()
                return text


class SelfScoring(OrsAdapter):
    """An adapter that reports its own outcome reward through ``get_reward()``.

    TRL's AsyncGRPO rollout loop calls reward functions without ``environments`` and
    returns an environment to its pool before the group is scored, so ``outcome_reward``
    cannot score there; it calls ``get_reward()`` as each rollout finishes instead. Use the
    generated ``Scored<Env>`` class with ``reward_funcs=[]`` (GRPOTrainer accepts it too);
    do not also pass ``outcome_reward``, or the reward counts twice.
    """

    def get_reward(self) -> float | None:
        """The rollout's last non-null reward; ``unfinished_reward`` when the session worked
        but nothing scored; ``None`` after an infrastructure or grader failure. In
        AsyncGRPO's rollout child it also sends the ``ors/*`` metrics to the trainer's log."""
        outcome = self.rollout.settle()
        metrics.push_to_worker()
        return outcome.reward

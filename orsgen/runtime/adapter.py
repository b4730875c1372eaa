"""The base class every generated adapter stands on.

A generated adapter subclasses :class:`OrsAdapter` and adds one typed public method per ORS
tool. TRL turns every public *function* of the class into a tool (except ``reset`` and
``get_reward``), so this base defines no other public function: its helpers are private, and
``close`` and ``rollout`` are properties. Each ``reset()`` starts a new
:class:`~orsgen.runtime.rollouts.rollout.AdapterRollout`, which the adapter delegates to.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NoReturn, Unpack

from orsgen.runtime import dataset
from orsgen.runtime.records import passk
from orsgen.runtime.config import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_OPEN_TIMEOUT,
    UNSET,
    AdapterConfig,
    AdapterSettings,
)
from orsgen.runtime.choosing import tasks
from orsgen.runtime.errors import OrsRuntimeError, ServerNotConfiguredError, SessionOpenError
from orsgen.runtime.images import Content, ContentPart, ImageLike, ImagePart, TextPart
from orsgen.runtime.records import metrics, trainer_facts
from orsgen.runtime.records.protocol import Rollout
from orsgen.runtime.rollouts.rollout import AdapterRollout
from orsgen.runtime.sessions import cap, pool
from orsgen.runtime.sessions.drift import ToolDriftError, ToolDriftWarning
from orsgen.runtime.sessions.opening import SessionOptions
from orsgen.runtime.sessions.pool import EXIT_BUDGET, SessionSlot
from orsgen.runtime.transport import health

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
    "AdapterConfig",
    "close_all_sessions",
]


# What reset() returns for a degraded rollout: short, and says why nothing works.
UNAVAILABLE_PROMPT = "(The environment is unavailable right now. This episode is not scored.)"


def close_all_sessions(timeout: float = EXIT_BUDGET) -> None:
    """Close every session this process still holds, held or prefetched, concurrently
    (also done at interpreter exit)."""
    pool.close_sessions(timeout)


class OrsAdapter:
    """Base class of generated ORS adapters. Construct freely: no network I/O happens
    until :meth:`reset`. Keywords (``docs/training.md``):

    Args:
        base_url: URL of a single-host ORS server, or URLs of servers of the same environment
            (each session goes to the one with the fewest open sessions). Defaults to
            ``OPENREWARD_SESSION_URL``, then the snapshot's URL; a catalog package defaults to
            the platform. With none of these, ``reset()`` raises :class:`ServerNotConfiguredError`.
        api_key: API key; defaults to ``OPENREWARD_API_KEY``. Never stored in generated code.
        secrets: per-session secrets, sent in the ``X-Secrets`` header.
        env_name, deployment, split: the environment's name on the server, its catalog name
            (``namespace/name``) and the split ``reset(task_index=...)`` opens; the snapshot's
            by default.
        timeout: seconds a tool call may take before it returns an error.
        open_timeout: seconds opening a session (including the environment's setup) may take.
        group_size: group prefetch. ``None`` (default) learns GRPO's group size from the
            resets it sees; an int fixes it; ``1`` (or ``prefetch=False``) opens every session
            on demand.
        keepalive: seconds between keepalive pings of an open session; ``None`` keeps the
            SDK's 10 s. Lower it for servers with a short stale-session threshold.
        reconnect_for: seconds to wait for a server that went away or refuses new sessions.
        strict: raise instead of warning once on drifted tools (:class:`ToolDriftError`) or
            degrading past ``reconnect_for``.
        multimodal: return images as TRL content lists with ``PIL.Image.Image`` parts (needs
            ``orsgen[vision]``); otherwise each image is a text placeholder.
        env_overrides: environment variables for the environment's container, sent at
            session creation; treated like secrets: never logged or stored.
        max_sessions: at most this many sessions of the class open in this process at once
            (prefetched ones included); a reset waits for a place within ``reconnect_for``.
        rollout_timeout: seconds from ``reset()``'s open session after which tool calls end
            the episode, unfinished, without a round trip.
        seed, num_tasks, indices: task choice for ``train_dataset=None``
            (:mod:`orsgen.runtime.choosing.tasks`).
        sampler: makes the task sampler of a stream from ``(tasks, seed, group_size,
            pass_threshold)``; uniform seeded passes by default. It observes every settled
            outcome of a rollout whose task it chose.
        curriculum: shorthand for the sampler (not with ``sampler=``): ``None`` /
            ``"uniform"``, ``"pass_rate"`` (favour tasks the model sometimes solves), or a
            ``PassRateCurriculum`` with other parameters.
        unfinished_reward: the reward of a rollout whose session worked but never scored.
        trajectories: a path (one JSON line per rollout) or a sink with ``write(line)``.
        upload_run: a run name (or an :class:`~orsgen.runtime.upload.UploadRun`): every
            settled rollout also goes to OpenReward's runs UI, from a background thread that
            never holds up a reset or a tool call.
        clock: the rollout deadline's clock (seconds, monotonic); for tests and simulations.
        pass_threshold: a scored rollout *passes* when its reward is at least this; defaults
            to the class's ``PASS_THRESHOLD`` (1.0, full marks).
        config: an :class:`~orsgen.runtime.config.AdapterConfig` instead of the keywords.
    """

    ENV_NAME: ClassVar[str | None] = None
    DEPLOYMENT: ClassVar[str | None] = None
    DEFAULT_URL: ClassVar[str | None] = None
    DEFAULT_SPLIT: ClassVar[str] = "train"
    TOOLS_SHA256: ClassVar[str] = ""
    # The package's pass threshold (``pass_threshold=`` overrides it; orsgen eval reads it).
    PASS_THRESHOLD: ClassVar[float] = passk.PASS_THRESHOLD
    # (wire name, argument) of the environment's @terminal tool, hidden from the model.
    TERMINAL_TOOL: ClassVar[tuple[str, str | None] | None] = None
    # Whether the environment judges groups of candidates itself (ORS score_group).
    SUPPORTS_SCORE_GROUP: ClassVar[bool] = False
    # The SDK harness toolset every session binds (``orsgen --toolset``), or None.
    TOOLSET: ClassVar[str | None] = None
    # Each method's (wire tool name, {python parameter: wire parameter}); unmapped: same name.
    WIRE_NAMES: ClassVar[Mapping[str, tuple[str, Mapping[str, str]]]] = {}

    def __init__(
        self, *, config: AdapterConfig | None = None, **settings: Unpack[AdapterSettings]
    ) -> None:
        if config is not None and settings:
            raise TypeError("pass config= or keyword settings, not both")
        self._config = config or AdapterConfig.of(type(self), **settings)
        built = trainer_facts.environment_name()  # by TRL's environment_factory: its key
        if built is not None:
            metrics.counts().expect(built[1])  # the run's environments (none when one)
            rollouts = dataclasses.replace(self._config.rollouts, environment=built[0])
            self._config = dataclasses.replace(self._config, rollouts=rollouts)
        cap.of(type(self)).adopt(self, self._config.sessions.max_sessions)
        self._lock = threading.RLock()
        self._slot = SessionSlot(type(self))
        self._finalizer = weakref.finalize(self, self._slot.close, False)  # wait=False
        self._finalizer.atexit = False  # the runtime's exit shutdown closes sessions in order
        self._rollout = self._new_rollout()

    @property
    def _prefetcher(self) -> pool.Prefetcher:
        return self._config.sessions.prefetcher(type(self))

    def _new_rollout(self, split: str | None = None) -> AdapterRollout:
        """A rollout on ``split`` (``None``: the adapter's ``split=``)."""
        config, sessions = self._config, self._config.sessions
        if split is not None and split != sessions.split:  # the stream key holds the split
            sessions = dataclasses.replace(sessions, split=split)
        return AdapterRollout(
            type(self), config.rollouts, sessions, self._slot, self._lock, config.pass_threshold
        )

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
        if self._config.no_server is not None:
            raise ServerNotConfiguredError(f"{type(self).__name__}: {self._config.no_server}")
        with self._lock:
            self._slot.close(wait=False)
            self._rollout.end()  # the previous rollout's trajectory line, once
            rollout = self._rollout = self._new_rollout(split)
            sampler = None
            if task_index is None and task_spec is None:  # train_dataset=None: choose here
                sampler = self._sampler(rollout.here)
                task_index = tasks.choose(sampler)
            index = None if task_spec is not None else int(task_index or 0)
            prompt = rollout.open(index, task_spec, sampler)
            return UNAVAILABLE_PROMPT if prompt is None else prompt

    def _sampler(self, here: SessionOptions) -> tasks.TaskSampler:
        """The task sampler of this adapter's stream (class, server, split)."""
        owner = type(self)
        return tasks.sampler_for(
            self._config.tasks,
            self._config.pass_threshold,
            tasks.StreamKey(
                f"{owner.__module__}.{owner.__qualname__}", here.endpoint.label, here.split
            ),
            f"{owner.__name__} on {here.endpoint.label}",
            here.split,
            lambda: dataset.split_size(here.endpoint, here.split, timeout=here.open_timeout),
        )

    @property
    def rollout(self) -> Rollout:
        """The current rollout (a new one at every reset), as the reward functions, metrics,
        trajectory log and evaluation read it; a property, which TRL never offers as a tool."""
        return self._rollout

    # The current rollout's results (properties, which TRL never offers as tools).

    @property
    def reward(self) -> float | None:
        """The rollout's last non-null reward."""
        return self._rollout.reward

    @property
    def rewards(self) -> list[float | None]:
        """Each tool call's reward, ``None`` where a call was unscored or failed."""
        return self._rollout.rewards

    @property
    def metadata(self) -> list[dict[str, Any] | None]:
        """Each tool call's metadata."""
        return self._rollout.metadata

    @property
    def finished(self) -> bool:
        """Whether the episode is over (finished, timed out, or unscorable)."""
        return self._rollout.finished

    @property
    def last_output(self) -> str:
        """The last tool call's text."""
        return self._rollout.last_output

    def _call(self, wire_name: str, arguments: dict[str, Any]) -> Content:
        """Call a tool by its wire name (the generated methods' one way down). A failure
        raises :class:`ToolCallFailure`, which TRL catches and counts."""
        return self._rollout.call(wire_name, arguments)

    def _fail(self, wire_name: str, message: str) -> NoReturn:
        """A call the model got wrong before anything was sent (client-side validation):
        recorded, then raised so that TRL counts it."""
        self._rollout.refuse(wire_name, message)

    @classmethod
    def degraded_rollouts(cls) -> int:
        """How many rollouts of this class (and subclasses) ran degraded in this process; a
        classmethod, which TRL does not offer as a tool."""
        return health.degraded(cls)

    @property
    def close(self) -> Callable[[], None]:
        """``adapter.close()`` ends the open session and this class's unused prefetched ones; a
        property, which TRL never offers to the model as a tool."""

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
        """Close this class's sessions in this process, prefetched ones included. TRL never
        closes the environments it pools; a classmethod, which TRL does not offer as a tool."""
        pool.close_sessions(pool.CLOSE_WAIT, of=lambda klass: issubclass(klass, cls))


class SelfScoring(OrsAdapter):
    """An adapter that reports its own outcome reward through ``get_reward()``. TRL's
    AsyncGRPO rollout loop calls reward functions without ``environments`` and returns an
    environment to its pool before the group is scored, so ``outcome_reward`` cannot score
    there; it calls ``get_reward()`` as each rollout finishes instead. Use the generated
    ``Scored<Env>`` class with ``reward_funcs=[]``; do not also pass ``outcome_reward``, or
    the reward counts twice."""

    def get_reward(self) -> float | None:
        """The rollout's last non-null reward; ``unfinished_reward`` when the session worked
        but nothing scored; ``None`` after an infrastructure or grader failure. In
        AsyncGRPO's rollout child it also sends the ``ors/*`` metrics to the trainer's log."""
        outcome = self.rollout.settle()
        metrics.push_to_worker()
        return outcome.reward

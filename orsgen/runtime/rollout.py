"""One rollout's state, and its view for the reward functions.

:class:`RolloutState`, the base of :class:`~orsgen.runtime.adapter.OrsAdapter`, keeps what
one rollout produced (the public ``reward``, ``rewards``, ``metadata``, ``finished`` and
``last_output``), what ends it unscored (a lost session, a degraded rollout), and the
reward functions' view of it (``rollout``, a :class:`~orsgen.runtime.rewards.Rollout`).
Its :class:`~orsgen.runtime.tracking.RolloutBook` chooses tasks, keeps the rollout's record
and feeds the metrics and the trajectory log. A failed tool call is recorded, then raised
as a :class:`~orsgen.runtime.errors.ToolCallFailure`, so that TRL counts it.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Hashable, Mapping
from typing import Any, ClassVar, NoReturn

from orsgen.jsonobject import is_object
from orsgen.runtime import health, sdk
from orsgen.runtime.blocks import blocks_to_content, blocks_to_text
from orsgen.runtime.endpoint import Endpoint
from orsgen.runtime.episode import Outcome
from orsgen.runtime.errors import (
    CallTimeout,
    ToolCallFailure,
    ToolEnvironmentError,
    ToolInputError,
    describe,
    tool_failure,
)
from orsgen.runtime.health import Action
from orsgen.runtime.images import Content
from orsgen.runtime.pool import SessionSlot
from orsgen.runtime.process import current
from orsgen.runtime.rewards import Rollout
from orsgen.runtime.tracking import RolloutBook


class RolloutState:
    """The rollout half of an adapter. The adapter sets the attributes declared here and
    implements :meth:`_call`."""

    TERMINAL_TOOL: ClassVar[tuple[str, str | None] | None]
    SUPPORTS_SCORE_GROUP: ClassVar[bool]

    reward: float | None
    rewards: list[float | None]
    metadata: list[dict[str, Any] | None]
    finished: bool
    last_output: str

    _lock: threading.RLock
    _slot: SessionSlot
    _endpoint: Endpoint
    _split: str
    _timeout: float
    _multimodal: bool
    _max_sessions: int | None
    _rollout_timeout: float | None
    _book: RolloutBook

    def _call_once(self, wire_name: str, arguments: dict[str, Any]) -> Content | ToolCallFailure:
        raise NotImplementedError

    def _degrade(self) -> None:
        raise NotImplementedError

    def _begin(self, task_index: int | None, task_spec: Mapping[str, Any] | None) -> int | None:
        """End the previous rollout (its trajectory line, once) and start this one: clear the
        state, choose a task when the trainer gave none, and return the index to open."""
        self._book.write(type(self).__name__, self._split, self.rewards, self.finished)
        self._clear_state()
        chosen = task_index is None and task_spec is None
        if chosen:
            task_index = self._book.choose(type(self), self._endpoint, self._split)
        index = None if task_spec is not None else int(task_index or 0)
        self._book.begin(index, task_spec is not None, chosen)
        return index

    def _call(self, wire_name: str, arguments: dict[str, Any]) -> Content:
        """Call a tool by its wire name. A failure raises :class:`ToolCallFailure`
        (:class:`ToolInputError` for the model's mistakes, :class:`ToolEnvironmentError`
        for the environment's), which TRL catches and counts."""
        start = time.monotonic()
        with self._lock:
            return self._settle(wire_name, arguments, self._call_once(wire_name, arguments), start)

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
        # Its episode is over and scored, and the session closed to free its place (cap).
        self._over = False
        # When its time is up (``rollout_timeout`` once reset opened the session), and
        # whether that came.
        self._deadline: float | None = None
        self._timed_out = False

    def _record(self, text: str, reward: float | None, metadata: dict[str, Any] | None) -> str:
        self.rewards.append(reward)
        self.metadata.append(metadata)
        if reward is not None:
            self.reward = reward
        self.last_output = text
        return text

    def _fail(self, wire_name: str, message: str) -> NoReturn:
        """A call the model got wrong before anything was sent (client-side validation;
        generated methods pass their tool's wire name): recorded, then raised so that TRL
        counts it."""
        failure = ToolInputError(wire_name, "invalid_arguments", message)
        self._raise(wire_name, {}, failure, time.monotonic())

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

    def _no_session(self, wire_name: str) -> ToolCallFailure:
        """What a call gets when the rollout holds no session."""
        if self._timed_out:
            return ToolInputError(
                wire_name,
                "time_limit",
                f"the rollout's time limit (rollout_timeout={self._rollout_timeout:g} s) "
                "passed; the episode ends",
            )
        if self._over:
            return ToolInputError(
                wire_name,
                "episode_finished",
                "the episode is over (it finished and was scored, and its session was closed "
                "to free its place under max_sessions); call reset() for a new one",
            )
        if self._void:
            return ToolEnvironmentError(
                wire_name, "unavailable", "environment unavailable; this episode is not scored"
            )
        return ToolEnvironmentError(wire_name, "no_session", "no open session; call reset() first")

    def _start_clock(self) -> None:
        """Start the rollout's ``rollout_timeout`` once its session is open: time spent
        waiting for a place or a server (within ``reconnect_for``) is not the rollout's."""
        if self._rollout_timeout is not None:
            self._deadline = time.monotonic() + self._rollout_timeout

    def _time_left(self) -> float | None:
        """Seconds until the rollout's deadline (``None``: none). At the deadline the
        episode ends, its session closes with no round trip, and it counts as unfinished
        (``unfinished_reward``, ``None`` by default), even after an earlier score."""
        if self._deadline is None:
            return None
        left = self._deadline - time.monotonic()
        if left <= 0 and not self._timed_out:
            self._timed_out = self.finished = True
            self._book.timed_out()
            self._slot.close(wait=False)
        return left

    def _release_if_over(self) -> None:
        """Under a session cap, a scored episode that finished closes its session at once:
        an open session would still count against the server's limit. (An environment that
        judges groups keeps it for ``group_reward``.)"""
        if (
            self._max_sessions is not None
            and self.finished
            and self.reward is not None
            and not self._void
            and not self.SUPPORTS_SCORE_GROUP
        ):
            self._over = True
            self._slot.close(wait=False)

    def _call_error(self, wire_name: str, exc: BaseException) -> ToolCallFailure:
        if isinstance(exc, CallTimeout):
            return ToolEnvironmentError(
                wire_name,
                "timeout",
                f"no answer within {self._timeout:g} s from {self._endpoint.label}",
            )
        return tool_failure(wire_name, exc)

    def _lost(self, wire_name: str) -> ToolCallFailure:
        """The server no longer knows this session: the episode is over, unscored."""
        self._void = self.finished = True
        self._book.void("lost_session")
        return ToolEnvironmentError(
            wire_name,
            "lost_session",
            f"HTTP 404: {health.LOST_SESSION_TEXT} (the server restarted, or reaped the "
            "session); the episode ends unscored",
        )

    def _gave_up(
        self, wire_name: str, session: Any, exc: Exception, action: Action
    ) -> ToolCallFailure:
        """The failure to raise when the call policy gives up on a call."""
        if action is Action.LOST:
            sdk.mark_lost(session, exc)
            return self._lost(wire_name)
        if action is Action.TIMED_OUT:
            return self._call_error(wire_name, CallTimeout("no answer in time"))
        if action is Action.DEGRADE:
            self._degrade()
            return self._no_session(wire_name)
        return self._call_error(wire_name, exc)

    @property
    def rollout(self) -> Rollout:
        """This rollout as the reward functions read it (:class:`orsgen.runtime.rewards.Rollout`).
        A property, not a method, so TRL never offers it to the model as a tool."""
        return RolloutState._Rollout(self)

    class _Rollout:
        """The adapter's side of :class:`~orsgen.runtime.rewards.Rollout`; nested because it
        reads the rollout's private state."""

        __slots__ = ("_env",)

        def __init__(self, env: RolloutState) -> None:
            self._env = env

        @property
        def rewards(self) -> list[float | None]:
            return self._env.rewards

        @property
        def scorable(self) -> bool:
            return not self._env._void

        def outcome(self) -> Outcome:
            """How the rollout ended, with ``unfinished_reward`` applied."""
            return self._env._book.outcome(self._env.rewards, self._env.finished)

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
            try:
                rewards = current().run(sdk.score_group(session, answers), timeout=env._timeout)
            except Exception as exc:  # noqa: BLE001 - a judge failure means "no score"
                warnings.warn(
                    f"score_group on {env._endpoint.label} failed: {describe(exc)}", stacklevel=3
                )
                return None
            return rewards if len(rewards) == len(answers) else None

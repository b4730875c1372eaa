"""One rollout's state, and its view for the reward functions.

:class:`RolloutState`, the base of :class:`~orsgen.runtime.adapter.OrsAdapter`, keeps what
one rollout produced (the public ``reward``, ``rewards``, ``metadata``, ``finished`` and
``last_output``), what ends it unscored (a lost session, a degraded rollout), and the
reward functions' view of it (``rollout``, a :class:`~orsgen.runtime.rewards.Rollout`).
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Hashable
from typing import Any, ClassVar

from orsgen.jsonobject import is_object
from orsgen.runtime import health, sdk
from orsgen.runtime.blocks import blocks_to_content, blocks_to_text
from orsgen.runtime.endpoint import Endpoint
from orsgen.runtime.errors import CallTimeout, describe
from orsgen.runtime.images import Content
from orsgen.runtime.pool import SessionSlot
from orsgen.runtime.process import current
from orsgen.runtime.rewards import Rollout


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

    def _call(self, wire_name: str, arguments: dict[str, Any]) -> Content:
        raise NotImplementedError

    def _clear_state(self) -> None:
        self._final_submitted = False
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
        # When its time is up (``rollout_timeout`` from reset), and whether that came.
        self._deadline = None if self._rollout_timeout is None else (
            time.monotonic() + self._rollout_timeout
        )
        self._timed_out = False

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
        meta = dict(out.metadata) if is_object(out.metadata) else None
        blocks = list(out.blocks or [])
        text = self._record(blocks_to_text(blocks) or "(no output)", reward, meta)
        if self._multimodal:  # a content list when an image survived decoding, else str
            return blocks_to_content(blocks, True) or text
        return text

    def _no_session(self, wire_name: str) -> str:
        """What a call gets when the rollout holds no session."""
        if self._timed_out:
            return self._fail(
                f"the rollout's time limit (rollout_timeout={self._rollout_timeout:g} s) "
                "passed; the episode ends unscored"
            )
        if self._over:
            return self._fail(
                "the episode is over (it finished and was scored, and its session was closed "
                "to free its place under max_sessions); call reset() for a new one"
            )
        if self._void:
            return self._fail("environment unavailable")
        return self._fail(f"no open session for tool {wire_name!r}; call reset() first")

    def _time_left(self) -> float | None:
        """Seconds until the rollout's deadline (``None``: none). At the deadline the
        episode ends unscored and its session closes, with no round trip."""
        if self._deadline is None:
            return None
        left = self._deadline - time.monotonic()
        if left <= 0 and not self._timed_out:
            self._timed_out = self._void = self.finished = True
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

    def _call_error(self, wire_name: str, exc: BaseException) -> str:
        if isinstance(exc, CallTimeout):
            return self._fail(
                f"tool {wire_name!r} got no answer within {self._timeout:g} s from "
                f"{self._endpoint.label}"
            )
        return self._fail(f"tool {wire_name!r} failed: {describe(exc)}")

    def _lost(self, wire_name: str) -> str:
        """The server no longer knows this session: the episode is over, unscored."""
        self._void = self.finished = True
        return self._fail(
            f"tool {wire_name!r} failed: HTTP 404: {health.LOST_SESSION_TEXT} (the server "
            "restarted, or reaped the session); the episode ends unscored"
        )

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
            env._call(name, {} if arg is None else {arg: message})
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

"""One reset's rollout (:class:`AdapterRollout`): its session, rewards, record, deadline and
outcome, in an explicit state (docs/internals.md, "One rollout per reset")."""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections.abc import Hashable, Mapping
from typing import Any, NoReturn

from orsgen.jsonobject import is_object
from orsgen.runtime.errors import (
    CallTimeout,
    ToolCallFailure,
    ToolEnvironmentError,
    ToolInputError,
    describe,
    tool_failure,
)
from orsgen.runtime.choosing import tasks
from orsgen.runtime.images import Content, blocks_to_content, blocks_to_text, image_hashes
from orsgen.runtime.records.passk import PASS_THRESHOLD
from orsgen.runtime.records import metrics
from orsgen.runtime.records.episode import Call, Episode, Outcome, RolloutState, classify
from orsgen.runtime.rollouts.settings import RolloutSettings
from orsgen.runtime.sessions import drift
from orsgen.runtime.sessions.opening import SessionOptions, TaskRef
from orsgen.runtime.sessions.pool import SessionSlot
from orsgen.runtime.trajectories import writer as trajectories
from orsgen.runtime.transport import health, sdk
from orsgen.runtime.transport.policy import Action
from orsgen.runtime.transport.process import current
from orsgen.runtime.upload import build as upload


class AdapterRollout:
    """One reset's rollout on an adapter (``owner`` is its class); ``lock`` and ``slot``
    are the adapter's. The deadline runs on ``settings.clock``, durations on monotonic time."""

    def __init__(
        self,
        owner: type,
        settings: RolloutSettings,
        here: SessionOptions,
        slot: SessionSlot,
        lock: threading.RLock,
        pass_threshold: float = PASS_THRESHOLD,
    ) -> None:
        self.owner, self.settings, self.here = owner, settings, here
        self.env, self.split = owner.__name__, here.split  # the protocol's
        self.pass_threshold = pass_threshold
        self._slot, self._lock, self._clock = slot, lock, settings.clock
        self._sampler: tasks.TaskSampler | None = None  # the one that chose the task observes it
        self.state = RolloutState.OPENING
        self.episode = Episode()
        self.reward: float | None = None
        self.rewards: list[float | None] = []
        self.metadata: list[dict[str, Any] | None] = []
        self.last_output = ""
        self._task: tuple[str, str] | None = None  # set once the session is open
        self._deadline: float | None = None  # on ``clock``: when rollout_timeout passes
        self._final_submitted = False
        self._last_finished = False  # whether the last answered call finished the episode
        self._sent = False  # whether the current call left for the server
        self._images: list[str] = []  # the last answered call's image hashes

    @property
    def task_index(self) -> int | None:
        return self.episode.task_index

    @property
    def unfinished_reward(self) -> float | None:
        return self.settings.unfinished_reward

    @property
    def calls(self) -> list[Call]:
        return self.episode.calls

    @property
    def finished(self) -> bool:
        return self.state.finished

    @property
    def scorable(self) -> bool:
        return self.episode.void_reason is None

    def outcome(self) -> Outcome:
        """How the rollout ended, with ``unfinished_reward`` applied."""
        s, kept = self.settings, (self.finished, self.owner)
        return classify(self.episode, self.rewards, s.unfinished_reward, *kept, s.environment)

    def settle(self) -> Outcome:
        """The outcome, counted, observed and written once (see :meth:`Rollout.settle`)."""
        with self._lock:
            outcome = self.outcome()
            if not self.episode.counted:
                self.episode.counted = True
                metrics.counts().rollout_done(outcome, self.pass_threshold)
                if self._sampler is not None and self.task_index is not None:
                    tasks.observe(self._sampler, self.task_index, outcome)
            self.end()
            return outcome

    def end(self) -> None:
        """Write the trajectory line and queue the upload, each once when on (and opened)."""
        sink, episode = self.settings.trajectories, self.episode
        if self.settings.upload is not None:
            upload.ended(self, self.settings.upload)
        if sink is None or episode.written or not episode.opened:
            return
        episode.written = True
        trajectories.deliver(sink, self)

    def open(
        self,
        index: int | None,
        task_spec: Mapping[str, Any] | None,
        sampler: tasks.TaskSampler | None = None,
    ) -> Content | None:
        """Open this rollout's session (retries: :meth:`SessionOptions.open` alone). Returns the
        prompt, or ``None`` when the server stayed away past the reconnect window (degraded)."""
        chosen = sampler is not None
        self.episode = Episode(index, task_spec is not None, chosen, spec=task_spec)
        self._sampler = sampler
        started = time.monotonic()
        task = TaskRef(index, task_spec)
        opened = self.here.open(self.owner, task)
        self.episode.reset_seconds = time.monotonic() - started
        if opened is None:
            self.degrade()
            return None
        self.here = self.here.at(opened.endpoint)
        url = self.here.endpoint.session_url
        self._task = task.key
        self._slot.hold(opened.session, opened.place)
        if opened.tools is not None:
            drift.record(self.owner, opened.tools, self.split, index, url)
        try:
            where, judged = self.here.endpoint.label, (self.split, index)
            drifted = drift.enforce(self.owner, self.here.strict, where, url, judged)
        except drift.ToolDriftError:
            self._slot.close(wait=False)
            raise
        self.episode.drifted = drifted
        self.state = RolloutState.OPEN
        if self.settings.rollout_timeout is not None:  # not counting the wait to open
            self._deadline = self._clock() + self.settings.rollout_timeout
        if self.settings.multimodal:
            return blocks_to_content(opened.blocks)
        self.episode.prompt = opened.prompt
        return opened.prompt

    def degrade(self) -> None:
        """Run the rest of this rollout without an environment (its tools answer ``Error:
        environment unavailable``, no reward). Counted once, in the server's health record."""
        if self.episode.void_reason is not None:
            return
        self._void("unavailable")
        health.record(self.here.endpoint.session_url).degrade(self.owner, self.here.reconnect_for)

    def _void(self, reason: str) -> None:
        self.state = RolloutState.VOID
        if self.episode.void_reason is None:
            self.episode.void_reason = reason

    def call(self, wire_name: str, arguments: dict[str, Any]) -> Content:
        """Call a tool by its wire name; a failure is recorded, then raised as
        :class:`ToolInputError` (the model's mistake) or :class:`ToolEnvironmentError`."""
        start = time.monotonic()
        with self._lock:
            self._sent, self._images = False, []
            result = self._send(wire_name, arguments)
            if isinstance(result, ToolCallFailure):
                self._raise(wire_name, arguments, result, start)
            reward = self.rewards[-1] if self.rewards else None
            seconds = time.monotonic() - start
            finished = self._last_finished
            called = (wire_name, arguments, self.last_output, reward, finished, seconds)
            self.episode.called(*called, images=self._images)
            return result

    def refuse(self, wire_name: str, message: str) -> NoReturn:
        """A call the model got wrong before anything was sent: recorded, raised for TRL."""
        failure = ToolInputError(wire_name, "invalid_arguments", message)
        self._sent = False
        self._raise(wire_name, {}, failure, time.monotonic())

    def _raise(
        self, wire_name: str, arguments: dict[str, Any], failure: ToolCallFailure, start: float
    ) -> NoReturn:
        """Record a failed call (reward ``None``) and raise it: TRL counts it and gives the
        model ``{"error": str(failure)}``."""
        seconds = time.monotonic() - start
        with self._lock:
            self._record(f"Error: {failure}", None, None)
            called = (wire_name, arguments, str(failure), None, False, seconds, failure)
            self.episode.called(*called, sent=self._sent)
        raise failure

    def _send(self, wire_name: str, arguments: dict[str, Any]) -> Content | ToolCallFailure:
        """One call under the call policy; a failure is returned (:meth:`call` raises it)."""
        left = self._time_left()
        session = self._slot.session
        if session is None:
            return self._no_session(wire_name)
        if session.lost:
            return self._lost(wire_name)
        if session.dead_error is not None:  # the SDK already knows; skip a doomed request
            return self._call_error(wire_name, session.dead_error)
        timeout = self.settings.timeout
        budget = timeout if left is None else min(timeout, left)
        policy, until = self.here.policy(), time.monotonic() + budget
        self._sent = True
        while True:
            try:
                wait = max(until - time.monotonic(), 0.001)
                out = current().run(session.call_tool(wire_name, arguments), timeout=wait)
            except Exception as exc:  # noqa: BLE001 - the policy decides; call() raises
                action = policy.call_failed(exc, until)
                if action is Action.RETRY:
                    continue
                return self._gave_up(wire_name, session, exc, action)
            policy.succeeded()
            return self._answered(out)

    def _answered(self, out: Any) -> Content:
        reward: float | None = None
        with contextlib.suppress(TypeError, ValueError):  # a reward that is no number: none
            reward = None if out.reward is None else float(out.reward)
        self._last_finished = bool(out.finished)
        if out.finished and self.state is RolloutState.OPEN:
            self.state = RolloutState.FINISHED
        meta = dict(out.metadata) if is_object(out.metadata) else None
        blocks = list(out.blocks or [])
        self._images = image_hashes(blocks)
        text = self._record(blocks_to_text(blocks) or "(no output)", reward, meta)
        self._release_if_over()
        if self.settings.multimodal:  # a content list when an image survived decoding
            return blocks_to_content(blocks) or text
        return text

    def _record(self, text: str, reward: float | None, metadata: dict[str, Any] | None) -> str:
        self.rewards.append(reward)
        self.metadata.append(metadata)
        if reward is not None:
            self.reward = reward
        self.last_output = text
        return text

    def _no_session(self, wire_name: str) -> ToolCallFailure:
        """What a call gets when the rollout holds no session, by its status."""
        if self.state is RolloutState.TIMED_OUT:
            return ToolInputError(
                wire_name,
                "time_limit",
                f"the rollout's time limit (rollout_timeout={self.settings.rollout_timeout:g} s) "
                "passed; the episode ends",
            )
        if self.state is RolloutState.RELEASED:
            return ToolInputError(
                wire_name,
                "episode_finished",
                "the episode is over (it finished and was scored, and its session was closed "
                "to free its place under max_sessions); call reset() for a new one",
            )
        if self.state is RolloutState.VOID:
            return ToolEnvironmentError(
                wire_name, "unavailable", "environment unavailable; this episode is not scored"
            )
        return ToolEnvironmentError(wire_name, "no_session", "no open session; call reset() first")

    def _time_left(self) -> float | None:
        """Seconds until the rollout's deadline (``None``: none). There the episode ends, its
        session closes with no round trip, and it counts as unfinished, even after a score."""
        if self._deadline is None:
            return None
        left = self._deadline - self._clock()
        if left <= 0 and self.state is not RolloutState.TIMED_OUT:
            self.state = RolloutState.TIMED_OUT
            self.episode.timed_out = True
            self._slot.close(wait=False)
        return left

    def _release_if_over(self) -> None:
        """Under a session cap, a finished scored episode closes its session at once (an open one
        counts against the server's limit), unless the environment judges groups."""
        if (
            self.here.max_sessions is not None
            and self.state is RolloutState.FINISHED
            and self.reward is not None
            and not getattr(self.owner, "SUPPORTS_SCORE_GROUP", False)
        ):
            self.state = RolloutState.RELEASED
            self._slot.close(wait=False)

    def _call_error(self, wire_name: str, exc: BaseException) -> ToolCallFailure:
        if isinstance(exc, CallTimeout):
            return ToolEnvironmentError(
                wire_name,
                "timeout",
                f"no answer within {self.settings.timeout:g} s from {self.here.endpoint.label}",
            )
        return tool_failure(wire_name, exc)

    def _lost(self, wire_name: str) -> ToolCallFailure:
        """The server no longer knows this session: the episode is over, unscored."""
        self._void("lost_session")
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
            self.degrade()
            return self._no_session(wire_name)
        return self._call_error(wire_name, exc)

    @property
    def takes_final_answer(self) -> bool:
        return getattr(self.owner, "TERMINAL_TOOL", None) is not None

    def submit_final(self, message: str) -> str | None:
        """Feed the final assistant message to the terminal tool, once, unless the episode
        already finished; ``None`` when nothing was sent."""
        terminal: tuple[str, str | None] | None = getattr(self.owner, "TERMINAL_TOOL", None)
        with self._lock:
            if terminal is None or self._final_submitted or self.finished:
                return None
            self._final_submitted = True
        name, arg = terminal
        try:
            self.call(name, {} if arg is None else {arg: message})
        except ToolCallFailure:
            pass  # recorded in the rollout: it stays unscored
        return self.last_output

    @property
    def group(self) -> Hashable | None:
        """Equal keys are one GRPO group (class, server, split, task); ``None``: none judged."""
        judges = getattr(self.owner, "SUPPORTS_SCORE_GROUP", False)
        if not judges or self._task is None or self._slot.session is None:
            return None
        return (self.owner, self.here.endpoint, self.split, self._task)

    def score_group(self, answers: list[str]) -> list[float] | None:
        """The environment's scores of a group's final answers (ORS ``score_group``); ``None``
        when it cannot (unsupported, no session, failure: then ``group_error`` says why)."""
        session = self._slot.session
        if not getattr(self.owner, "SUPPORTS_SCORE_GROUP", False) or session is None or not answers:
            return None
        try:
            timeout = self.settings.timeout
            rewards = current().run(sdk.score_group(session, answers), timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - a judge failure means "no score"
            self.group_error = f"score_group on {self.here.endpoint.label} failed: {describe(exc)}"
            warnings.warn(self.group_error, stacklevel=3)
            return None
        return rewards if len(rewards) == len(answers) else None

"""The one protocol a rollout is read through (reward functions, metrics, trajectory log, a
loop without TRL); ``OrsAdapter.rollout`` is the current one, new at every reset."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Protocol, runtime_checkable

from orsgen.runtime.records.episode import Call, Episode, Outcome, RolloutState


class Rollout(Protocol):
    """One environment's rollout: what it is, what it did, how it ended."""

    @property
    def state(self) -> RolloutState: ...

    @property
    def env(self) -> str:
        """The adapter class's name."""
        ...

    @property
    def owner(self) -> type:
        """The adapter class (its package is what a trajectory line records)."""
        ...

    @property
    def split(self) -> str: ...

    @property
    def task_index(self) -> int | None:
        """Its task (``None`` before a reset, or for a ``task_spec``)."""
        ...

    @property
    def pass_threshold(self) -> float:
        """A scored rollout passes when its reward is at least this (the adapter's
        ``pass_threshold``; :func:`orsgen.runtime.records.passk.passes`)."""
        ...

    @property
    def unfinished_reward(self) -> float | None:
        """The reward of an unfinished rollout (the adapter's ``unfinished_reward``)."""
        ...

    @property
    def episode(self) -> Episode: ...

    @property
    def calls(self) -> Sequence[Call]: ...

    @property
    def rewards(self) -> Sequence[float | None]:
        """Each tool call's reward, ``None`` where a call was unscored or failed."""
        ...

    @property
    def finished(self) -> bool:
        """Whether the episode is over (finished, timed out, or void)."""
        ...

    @property
    def scorable(self) -> bool:
        """``False`` when the session was lost or the rollout ran degraded: no reward."""
        ...

    def outcome(self) -> Outcome:
        """How the rollout ended (scored, unfinished, failed) and its reward after the
        adapter's ``unfinished_reward`` policy."""
        ...

    def settle(self) -> Outcome:
        """:meth:`outcome`, counted once in the process's ``ors/*`` metrics, written
        once to the trajectory sink, and observed once by the task sampler."""
        ...

    @property
    def takes_final_answer(self) -> bool:
        """Whether the environment grades the final message through a terminal tool."""
        ...

    def submit_final(self, message: str) -> object:
        """Submit the final assistant message through the terminal tool (at most once)."""
        ...

    @property
    def group(self) -> Hashable | None:
        """Rollouts with equal keys are judged together by :meth:`score_group`; ``None``
        when the environment does not judge groups."""
        ...

    def score_group(self, answers: list[str]) -> list[float] | None:
        """The environment's scores for a group's final answers, ``None`` when it cannot."""
        ...


@runtime_checkable
class HasRollout(Protocol):
    """An environment the reward functions can score (every generated adapter)."""

    @property
    def rollout(self) -> Rollout: ...

"""The adapter's bookkeeping of its rollouts: task choice, calls, outcome, metrics, log.

An adapter owns one :class:`RolloutBook` (its settings: ``seed``, ``num_tasks``,
``indices``, ``group_size``, ``unfinished_reward``, ``trajectories``) and tells it what
happens; the book keeps the current :class:`~orsgen.runtime.episode.Episode`, feeds the
process's metrics (:func:`orsgen.runtime.metrics.counts`) and writes trajectory lines. The
adapter itself stays the TRL surface.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from orsgen.runtime import curriculum as curricula
from orsgen.runtime import dataset, drift, metrics, pool, ranks, tasks, trainer, trajectories
from orsgen.runtime.endpoint import Endpoint
from orsgen.runtime.episode import Episode, Outcome, classify, record
from orsgen.runtime.errors import ToolCallFailure

logger = logging.getLogger("orsgen.runtime")


def _open_sessions() -> int:
    return sum(1 for slot in pool.sessions().held() if slot.session is not None)


# The pool owns the session count and the drift guard its verdicts; the metrics read them.
metrics.gauge("ors/open_sessions", _open_sessions)
metrics.gauge("ors/drift", lambda: 1.0 if drift.drifted() else 0.0)


@dataclass(frozen=True)
class Settings:
    """The rollout settings an adapter's constructor takes (``functools.partial`` carries them)."""

    seed: int | None = None
    num_tasks: int | None = None
    indices: tuple[int, ...] | None = None
    group_size: int | None = None
    unfinished_reward: float | None = None
    trajectories: str | None = None
    # None / "uniform", "pass_rate", or a PassRateCurriculum (shared by its adapters).
    curriculum: object = None

    @staticmethod
    def of(
        seed: int | None,
        num_tasks: int | None,
        indices: Sequence[int] | None,
        group_size: int | None,
        unfinished_reward: float | None,
        trajectories: str | os.PathLike[str] | None,
        curriculum: object = None,
    ) -> Settings:
        if num_tasks is not None and indices is not None:
            raise ValueError("pass num_tasks or indices, not both")
        curricula.make(curriculum)  # refuses an unknown name or object now, not at reset
        return Settings(
            seed=None if seed is None else int(seed),
            num_tasks=num_tasks,
            indices=None if indices is None else tuple(int(i) for i in indices),
            group_size=group_size,
            unfinished_reward=None if unfinished_reward is None else float(unfinished_reward),
            trajectories=None if trajectories is None else os.fspath(trajectories),
            curriculum=None if curriculum == "uniform" else curriculum,
        )


def choose_task(
    settings: Settings, key: Hashable, label: str, split: str, split_size: Callable[[], int]
) -> tuple[int, int, tasks.Chooser]:
    """The task for a reset that got none, its global GRPO group and the stream that chose
    it. The first choice of a stream says, once, what it does; it raises
    :class:`~orsgen.runtime.tasks.TaskChoiceError` when groups could not stay whole."""
    facts = trainer.facts()
    layout = None
    if facts is not None and facts.rows is not None and facts.world > 1:
        layout = tasks.Layout(facts.rank, facts.world, facts.rows)
    tasks.check_single_process(label, layout)
    group = settings.group_size or (facts.num_generations if facts else None)
    if group is None:
        raise tasks.TaskChoiceError(
            f"{label}: reset() got no task_index or task_spec, and the GRPO group size is "
            "unknown (no GRPOTrainer or AsyncGRPO worker is calling): pass group_size= "
            "(your num_generations) to the adapter, or train_dataset=load_tasks(...) to the trainer."
        )
    seed = settings.seed
    if seed is None:
        seed = facts.seed if facts is not None and facts.seed is not None else tasks.DEFAULT_SEED
    stream = (key, settings.num_tasks, settings.indices, seed, group, settings.curriculum, layout)
    found = tasks.choosers().peek(stream)
    if found is None:
        candidates = tasks.candidates(split_size(), settings.num_tasks, settings.indices)
        found, made = tasks.choosers().get(
            stream,
            lambda: tasks.Chooser(
                candidates,
                seed,
                group,
                curricula.make(settings.curriculum),
                layout,
                ranks.all_gather,
            ),
        )
        if made:
            where = (
                f" (group size from {facts.source})" if facts and not settings.group_size else ""
            )
            logger.warning(
                "%s: reset() got no task (train_dataset=None): the adapter chooses tasks of "
                "split %r itself: %s%s.",
                label,
                split,
                found.describe(),
                where,
            )
    task, group_index = found.next_choice()
    return task, group_index, found


def _curriculum_metrics() -> dict[str, float]:
    """``ors/curriculum/*`` of this process's curricula (one per stream, usually one)."""
    found = [c.curriculum for c in tasks.choosers().all()]
    return curricula.report([c for c in found if isinstance(c, curricula.PassRateCurriculum)])


metrics.source(_curriculum_metrics)


class RolloutBook:
    """One adapter's current rollout and what has been counted and written of it."""

    def __init__(self, settings: Settings, open_timeout: float = dataset.DEFAULT_TIMEOUT) -> None:
        self.settings = settings
        self.episode = Episode()
        self._count_timeout = float(open_timeout)
        # The stream and global group of a chosen task: its settled outcome goes back there.
        self._choice: tuple[tasks.Chooser, int] | None = None
        self._chosen: tuple[tasks.Chooser, int] | None = None

    def choose(self, owner: type, endpoint: Endpoint, split: str) -> int:
        """The task of a reset that got none (TRL's ``train_dataset=None``)."""
        task, group, stream = choose_task(
            self.settings,
            (owner.__module__, owner.__qualname__, endpoint, split),
            f"{owner.__name__} on {endpoint.label}",
            split,
            lambda: dataset.split_size(endpoint, split, timeout=self._count_timeout),
        )
        self._chosen = (stream, group)
        return task

    def begin(self, index: int | None, from_spec: bool, chosen: bool) -> Episode:
        self.episode = Episode(task_index=index, task_spec=from_spec, chosen=chosen)
        self._choice, self._chosen = (self._chosen if chosen else None), None
        return self.episode

    def reset_took(self, seconds: float) -> None:
        self.episode.reset_seconds = seconds
        metrics.counts().reset_done(seconds)

    def called(
        self,
        tool: str,
        arguments: dict[str, Any],
        text: str,
        reward: float | None,
        finished: bool,
        seconds: float,
    ) -> None:
        self.episode.called(tool, arguments, text, reward, finished, seconds)
        metrics.counts().call_done(seconds)

    def failed(
        self, tool: str, arguments: dict[str, Any], failure: ToolCallFailure, seconds: float
    ) -> None:
        self.episode.failed(tool, arguments, failure, seconds)
        metrics.counts().call_done(seconds, True, failure.environment_failed)

    def void(self, reason: str) -> None:
        """The rollout can no longer be scored (``lost_session``, ``unavailable``)."""
        if self.episode.void_reason is None:
            self.episode.void_reason = reason

    def timed_out(self) -> None:
        """The rollout's ``rollout_timeout`` passed: it ends unfinished."""
        self.episode.timed_out = True

    def outcome(self, rewards: list[float | None], finished: bool = False) -> Outcome:
        return classify(self.episode, rewards, self.settings.unfinished_reward, finished)

    def count(self, rewards: list[float | None], finished: bool) -> Outcome:
        """Count the rollout's outcome in the metrics, once."""
        outcome = self.outcome(rewards, finished)
        if not self.episode.counted:
            self.episode.counted = True
            metrics.counts().rollout_done(outcome)
            if self._choice is not None and self.episode.task_index is not None:
                # Only a score says how hard the task is: unfinished and failed say nothing.
                stream, group = self._choice
                scored = outcome.reward if outcome.kind == "scored" else None
                stream.observe(group, self.episode.task_index, scored)
        return outcome

    def write(self, env: str, split: str, rewards: list[float | None], finished: bool) -> None:
        """Write the rollout's trajectory line, once, when ``trajectories=`` is set and the
        rollout opened a session."""
        path = self.settings.trajectories
        if path is None or self.episode.written or not self._opened():
            return
        self.episode.written = True
        line = record(self.episode, self.outcome(rewards, finished), env, split, finished)
        try:
            trajectories.writers().write(path, line)
        except OSError as exc:  # a full disk must not end the run; say it once per rollout
            logger.warning("could not write a trajectory line to %s: %s", path, exc)

    def _opened(self) -> bool:
        return self.episode.task_index is not None or self.episode.task_spec

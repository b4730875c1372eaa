"""Which task a reset opens when the trainer gives none (environment-owned data).

Without ``train_dataset``, ``reset()`` receives only ``prompt=`` (``trl/trainer/grpo_trainer.py``,
around line 862), so each candidate task is handed out ``group_size`` times in a row: both
trainers reset one group's rollouts one after another in one process (``RepeatSampler``;
AsyncGRPO's worker, ``async_rollout_worker.py`` around lines 549-583 and 878-887). Under several
processes only the built-in :class:`Chooser` with a GRPOTrainer's layout keeps groups whole.
The choice is a seam: the adapter's ``sampler=`` factory makes a :class:`TaskSampler` per stream.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import cast

from orsgen.runtime.choosing import curriculum as curricula
from orsgen.runtime.choosing import checkpoint
from orsgen.runtime.choosing.chooser import Chooser as Chooser
from orsgen.runtime.choosing.chooser import CurriculumFactory, Layout, all_gather
from orsgen.runtime.choosing.curriculum import PassRateCurriculum
from orsgen.runtime.choosing.streams import Samplers as Samplers
from orsgen.runtime.choosing.streams import StreamKey as StreamKey
from orsgen.runtime.choosing.streams import TaskSampler as TaskSampler
from orsgen.runtime.choosing.streams import samplers as samplers
from orsgen.runtime.errors import OrsRuntimeError
from orsgen.runtime.records import metrics, trainer_facts
from orsgen.runtime.records.episode import Outcome
from orsgen.runtime.transport.identity import identity

DEFAULT_SEED = 0

logger = logging.getLogger("orsgen.runtime")


class TaskChoiceError(OrsRuntimeError, ValueError):
    """``reset()`` got no task and the adapter cannot choose one safely."""


@dataclass(frozen=True)
class TaskChoice:
    """How an adapter chooses tasks for resets that got none (part of its ``AdapterConfig``):
    ``group_size`` ``None`` learns GRPO's group size from the trainer."""

    seed: int | None = None
    num_tasks: int | None = None
    indices: tuple[int, ...] | None = None
    group_size: int | None = None
    sampler: SamplerFactory = field(default_factory=lambda: Chooser)

    @staticmethod
    def of(
        seed: int | None,
        num_tasks: int | None,
        indices: Sequence[int] | None,
        group_size: int | None,
        sampler: SamplerFactory | None = None,
        curriculum: object = None,
    ) -> TaskChoice:
        if num_tasks is not None and indices is not None:
            raise ValueError("pass num_tasks or indices, not both")
        if sampler is not None:
            _check_factory(sampler)
        if curricula.make(curriculum) is not None:  # raises on an unknown one, now
            if sampler is not None:
                raise ValueError(
                    f"pass sampler= or curriculum=, not both: curriculum={curriculum!r} selects "
                    "the sampler (a Chooser whose groups the curriculum chooses)"
                )
            sampler = CurriculumFactory(cast("str | PassRateCurriculum", curriculum))
        return TaskChoice(
            seed=None if seed is None else int(seed),
            num_tasks=num_tasks,
            indices=None if indices is None else tuple(int(i) for i in indices),
            group_size=group_size,
            sampler=Chooser if sampler is None else sampler,
        )


# (candidate tasks, seed, group size, pass threshold) -> the stream's sampler.
SamplerFactory = Callable[[Sequence[int], int, int, float], TaskSampler]


def _check_factory(factory: Callable[..., object]) -> None:
    """Refuse, at construction, a ``sampler=`` not callable as
    ``factory(tasks, seed, group_size, pass_threshold)`` (an earlier orsgen's 3 arguments)."""
    try:
        inspect.signature(factory).bind([0], 0, 1, 1.0)
    except TypeError:
        raise TypeError(
            "sampler must be a callable (tasks, seed, group_size, pass_threshold) -> "
            f"TaskSampler, got {factory!r}: a factory of three arguments needs a fourth, "
            "pass_threshold (the adapter's, to judge passes by; ignore it if it is not needed)"
        ) from None
    except ValueError:
        pass  # no signature to read (a builtin): it is called as it is


def candidates(count: int, num_tasks: int | None, indices: Sequence[int] | None) -> list[int]:
    """The task indices a chooser samples from: ``load_tasks``' restriction of a split of
    ``count`` tasks (the first ``num_tasks``, or exactly ``indices``)."""
    if num_tasks is not None and indices is not None:
        raise ValueError("pass num_tasks or indices, not both")
    if indices is not None:
        chosen = [int(i) for i in indices]
        bad = [i for i in chosen if not 0 <= i < count]
        if bad:
            raise ValueError(f"indices {bad} are outside the split's {count} tasks")
        if not chosen:
            raise ValueError("indices is empty: there is no task to choose")
        return chosen
    if num_tasks is not None and num_tasks < 1:
        raise ValueError(f"num_tasks must be at least 1, got {num_tasks}")
    top = count if num_tasks is None else min(count, num_tasks)
    if top < 1:
        raise ValueError("the split has no tasks: there is no task to choose")
    return list(range(top))


def spread(sampler: TaskSampler, layout: Layout | None, label: str) -> TaskSampler:
    if layout is None:
        return sampler
    if not isinstance(sampler, Chooser):
        raise TaskChoiceError(
            f"{label}: the task sampler {type(sampler).__name__} cannot keep GRPO groups "
            f"whole across {layout.world} processes: use the built-in one (no sampler=, or "
            "curriculum=), or pass train_dataset=load_tasks(...) to the trainer."
        )
    sampler.spread(layout, all_gather)
    return sampler


def choose(sampler: TaskSampler) -> int:
    """``sampler.choose()``, counted as a change of its state (see :meth:`Samplers.changed`)."""
    task = sampler.choose()
    samplers().changed()
    return task


def observe(sampler: TaskSampler, task_index: int, outcome: Outcome) -> None:
    sampler.observe(task_index, outcome)
    samplers().changed()


def sampler_for(
    settings: TaskChoice,
    pass_threshold: float,
    key: StreamKey,
    label: str,
    split: str,
    split_size: Callable[[], int],
) -> TaskSampler:
    """The sampler of stream ``key``, made on first use and shared by the stream's instances;
    said once. :class:`TaskChoiceError` when groups could not stay whole."""
    facts = trainer_facts.facts()
    layout = None
    if facts is not None and facts.rows is not None and facts.world > 1:
        layout = Layout(facts.rank, facts.world, facts.rows)
    size = identity().world_size
    if size > 1 and (layout is None or layout.world != size):  # no layout to place groups by
        raise TaskChoiceError(
            f"{label}: reset() got no task_index or task_spec (train_dataset=None) in a "
            f"run of {size} processes. A GRPO group's rollouts can be split across processes, "
            "which cannot agree on one task per group without the dataset: pass "
            "train_dataset=load_tasks(...) to the trainer."
        )
    group = settings.group_size or (facts.num_generations if facts else None)
    if group is None:
        raise TaskChoiceError(
            f"{label}: reset() got no task_index or task_spec, and the GRPO group size is "
            "unknown (no GRPOTrainer or AsyncGRPO worker is calling): pass group_size= "
            "(your num_generations) to the adapter, or train_dataset=load_tasks(...) to the trainer."
        )
    seed = settings.seed
    if seed is None:
        seed = facts.seed if facts is not None and facts.seed is not None else DEFAULT_SEED
    stream = (key, replace(settings, seed=seed, group_size=group), layout, pass_threshold)
    found = samplers().peek(stream)
    if found is None:
        checkpoint.join()  # AsyncGRPO's worker: the saved states are staged before any is made
        among = candidates(split_size(), settings.num_tasks, settings.indices)
        found, made = samplers().get(
            stream,
            key,
            lambda: spread(settings.sampler(among, seed, group, pass_threshold), layout, label),
        )
        if made:
            checkpoint.made()
            custom = f"{type(found).__name__} (a custom task sampler)"
            how = found.describe() if isinstance(found, Chooser) else custom
            auto = f" (group size from {facts.source})" if facts and not settings.group_size else ""
            logger.warning(
                "%s: reset() got no task (train_dataset=None): the adapter chooses tasks of "
                "split %r itself: %s%s.",
                label,
                split,
                how,
                auto,
            )
    return found


def _curriculum_metrics() -> dict[str, float]:
    found = [s.curriculum for s in samplers().all() if isinstance(s, Chooser)]
    return curricula.report([c for c in found if c is not None])


metrics.source(_curriculum_metrics)

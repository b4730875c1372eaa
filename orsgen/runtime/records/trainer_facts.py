"""What the TRL trainer driving this process knows and does not hand the environment.

TRL gives ``reset()`` only the dataset row (with ``train_dataset=None`` a placeholder), but
these are readable without any configuration:

- ``GRPOTrainer`` calls ``environment.reset(**row)`` from its own method
  (``trl/trainer/grpo_trainer.py``, around line 2389), so the caller's frame holds the
  trainer: ``num_generations`` and ``args.seed``.
- AsyncGRPO runs its rollout loop in a spawned child started as
  ``Process(target=_child_main, args=(loop_cls, loop_kwargs, ..., metrics_queue))``
  (``experimental/async_grpo/async_rollout_worker.py``, around line 271). The child's own
  ``multiprocessing.current_process()`` keeps those arguments: ``loop_kwargs``'
  ``num_generations``, and the ``metrics_queue`` the trainer's ``log()`` drains into
  ``trainer.state.log_history`` (``async_grpo_trainer.py``, around line 1698).

- Both build each environment of a dict ``environment_factory`` with ``name`` a local of
  the building frame (``grpo_trainer.py`` around lines 686 and 2358,
  ``async_rollout_worker.py`` around 436 and 574; docs/training.md, "Several environments").

Only frames of TRL's modules (``trl.*``) have their locals read. Every reader returns
``None`` when the shape is not the one above; the caller then asks the user
(``group_size=``) or does without.
"""

from __future__ import annotations

import functools
import inspect
import multiprocessing
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, cast

from orsgen.runtime.transport.identity import identity

# How far up the stack a reset may be from the trainer's own call (user wrappers).
_MAX_DEPTH = 8


@dataclass(frozen=True)
class TrainerFacts:

    num_generations: int
    seed: int | None
    source: str  # "GRPOTrainer" or "AsyncGRPO rollout worker"
    # GRPOTrainer's process layout: this rank, the ranks, and the rows each rank resets per
    # generation (``args.train_batch_size * steps_per_generation``: its dataloader's batch).
    rank: int = 0
    world: int = 1
    rows: int | None = None


def _frames(frame: Any) -> Iterator[Any]:
    """TRL's own frames among ``frame`` and the few above it (user wrappers may sit in
    between), told by their code's module before their locals are read: on Python 3.11 and
    3.12, reading ``f_locals`` stores the locals on the frame, so a caller's would stay alive
    after it dropped them (its adapters, with their sessions open)."""
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return
        if str(frame.f_globals.get("__name__", "")).startswith("trl."):
            yield frame
        frame = frame.f_back


def trainer(frame: Any) -> Any | None:
    """The ``GRPOTrainer`` whose method is on the stack at or a few frames above ``frame``."""
    for found in _frames(frame):
        owner = found.f_locals.get("self")
        if isinstance(getattr(owner, "num_generations", None), int) and hasattr(
            owner, "environments"
        ):
            return owner
    return None


# The trainer step of the last scored batch in this process (reward functions get the
# trainer's state): the step a settling rollout belongs to, ``None`` outside a trainer.
_step: int | None = None


def note_step(trainer_state: Any) -> None:
    """Remember ``trainer_state.global_step`` (TRL's ``trainer_state`` reward argument)."""
    global _step
    step = getattr(trainer_state, "global_step", None)
    if isinstance(step, int):
        _step = step


def current_step() -> int | None:
    return _step


@functools.cache
def _start_arguments(pid: int) -> dict[str, Any] | None:
    """AsyncGRPO's ``_child_main`` arguments when process ``pid`` is that child (read once)."""
    process: Any = multiprocessing.current_process()
    target = getattr(process, "_target", None)
    if getattr(target, "__name__", None) != "_child_main" or target is None:
        return None
    try:
        bound = inspect.signature(target).bind(
            *getattr(process, "_args", ()), **getattr(process, "_kwargs", {})
        )
    except (TypeError, ValueError):
        return None
    return dict(bound.arguments)


def _worker(argument: str) -> Any:
    """An argument of AsyncGRPO's ``_child_main`` when this process is that child."""
    arguments = _start_arguments(os.getpid())
    return arguments.get(argument) if arguments else None


def _loop_kwargs() -> dict[str, object]:
    found: object = _worker("loop_kwargs")
    return cast(dict[str, object], found) if isinstance(found, dict) else {}


def facts() -> TrainerFacts | None:
    """The trainer resetting this adapter (GRPOTrainer's stack, AsyncGRPO's child), or ``None``."""
    owner = trainer(sys._getframe(1))  # pyright: ignore[reportPrivateUsage]
    if owner is None:
        generations = _loop_kwargs().get("num_generations")
        if not isinstance(generations, int):
            return None
        return TrainerFacts(generations, None, "AsyncGRPO rollout worker")
    args = getattr(owner, "args", None)
    seed = getattr(args, "seed", None)
    found = TrainerFacts(
        owner.num_generations, seed if isinstance(seed, int) else None, type(owner).__name__
    )
    batch = getattr(args, "train_batch_size", None)  # the dataloader's, per process
    steps = getattr(args, "steps_per_generation", None)
    if not (isinstance(batch, int) and isinstance(steps, int)):
        return found
    me = identity()  # accelerate's process_index is torch.distributed's rank
    return replace(found, rank=me.rank, world=me.world_size, rows=batch * steps)


def worker_model() -> str | None:
    """The model AsyncGRPO's rollout child generates with, when this process is that child."""
    name = _loop_kwargs().get("model_name")
    return name if isinstance(name, str) and name else None


def worker_metrics_queue() -> Any | None:
    """The AsyncGRPO worker's metrics queue when this process is its rollout child."""
    found = _worker("metrics_queue")
    return found if hasattr(found, "put_nowait") else None


def environment_name() -> tuple[str | None, tuple[str, ...]] | None:
    """When TRL's ``environment_factory`` is constructing the caller, the name it builds it under
    and every name of the dict (``(None, ())`` for one environment); ``None`` outside it."""
    for frame in _frames(sys._getframe(1)):  # pyright: ignore[reportPrivateUsage]
        factories = getattr(frame.f_locals.get("self"), "environment_factories", None)
        if isinstance(factories, dict) and "name" in frame.f_locals:
            name, names = frame.f_locals["name"], list(cast(dict[object, Any], factories))
            if len(names) > 1 and isinstance(name, str) and name in names:
                return name, tuple(str(k) for k in names)
            return None, ()
    return None

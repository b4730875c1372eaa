"""Which training process this is: the one answer every runtime module reads (the rule
docs/curriculum.md states). A launcher variable that is not a whole number is an error: guessing
rank 0 would make two processes write the same files. ``torch`` is never imported here: a
process that has not imported it has not initialised it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ProcessIdentity:
    """This process among the run's training processes."""

    rank: int
    world_size: int
    local_rank: int
    source: str  # "torch.distributed", "launcher" or "single process"

    @property
    def is_main(self) -> bool:
        """Whether this is the world's process zero (the one that writes shared files)."""
        return self.rank == 0


def _variable(name: str) -> int | None:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(
            f"{name}={value!r} is not a whole number: the launcher's {name} says which "
            "training process this is"
        ) from None


def _distributed() -> tuple[int, int] | None:
    dist: Any = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank()), int(dist.get_world_size())
    except (RuntimeError, ValueError):  # a backend torn down mid-call: ask the launcher
        return None
    return None


def identity() -> ProcessIdentity:
    """This process's ``(rank, world_size, local_rank)``: from ``torch.distributed`` when this
    process initialised it, else the launcher's ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK``
    (set before the process group exists), else ``(0, 1, 0)``. The local rank is
    ``LOCAL_RANK`` when set, else the rank."""
    found = _distributed()
    local = _variable("LOCAL_RANK")
    if found is not None:
        rank, world = found
        return ProcessIdentity(rank, world, rank if local is None else local, "torch.distributed")
    given_rank, given_world = _variable("RANK"), _variable("WORLD_SIZE")
    if given_rank is None and given_world is None and local is None:
        return ProcessIdentity(0, 1, 0, "single process")
    rank = 0 if given_rank is None else given_rank
    world = max(1, 1 if given_world is None else given_world)
    return ProcessIdentity(rank, world, rank if local is None else local, "launcher")

"""Outcomes shared between training processes (torchrun, accelerate) over the trainer's
own ``torch.distributed`` process group.

Only :class:`~orsgen.runtime.choosing.chooser.Chooser` calls :func:`all_gather`, at the
first reset of each generation, which every rank reaches once per generation (GRPOTrainer
resets its whole generation batch before it generates): a collective there cannot be
missed by one rank and waited on by another.
"""

from __future__ import annotations

import sys
from typing import Any


def all_gather(mine: object) -> list[Any]:
    """Every rank's ``mine``, in rank order; ``[mine]`` when there is no process group."""
    # Never imported here: a process that has not imported it has not initialised it.
    dist: Any = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return [mine]
    gathered: list[Any] = [None] * int(dist.get_world_size())
    dist.all_gather_object(gathered, mine)
    return gathered

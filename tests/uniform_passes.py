"""The seeded uniform passes, written from their definition (the task choice's docstring,
docs/training.md) as the oracle the chooser's tests compare with: pass ``p`` is every task
once, in the order ``Random(f"{seed}:{p}")`` shuffles them, and each task serves one GRPO
group of ``group_size`` consecutive resets."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Sequence


def group_task(tasks: Sequence[int], seed: int, group: int) -> int:
    """The task of global group ``group``."""
    shuffled = list(tasks)
    random.Random(f"{seed}:{group // len(shuffled)}").shuffle(shuffled)
    return shuffled[group % len(shuffled)]


def order(tasks: Sequence[int], seed: int, group_size: int) -> Iterator[int]:
    """Endless task indices, one per reset: each group's task ``group_size`` times."""
    for group in itertools.count():
        yield from itertools.repeat(group_task(tasks, seed, group), group_size)

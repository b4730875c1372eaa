"""Weighted mixtures: which environment, and which of its rows, each row of a weighted
``bundle_tasks(..., weights=..., block=B)`` holds, by the rules docs/several-environments.md
states (quotas by largest remainder, seeded orders and passes). No I/O.
"""

from __future__ import annotations

import math
import numbers
import random
from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction

from orsgen.runtime.transport.identity import identity

# An environment's rows in the bundle: the indices of its dataset's rows, or ``None`` for
# every row of an environment that chooses its own tasks (no dataset).
Row = tuple[str, int | None]


def check_weights(names: Sequence[str], weights: Mapping[str, object]) -> dict[str, Fraction]:
    """Each bundled environment's weight, exact; a missing, unknown, non-numeric, zero or
    negative weight is a ``ValueError`` naming the environment."""
    unknown = [name for name in weights if name not in names]
    if unknown:
        raise ValueError(
            f"weights names {unknown[0]!r}, which is not a bundled environment "
            f"(bundled: {', '.join(map(repr, names))})"
        )
    exact: dict[str, Fraction] = {}
    for name in names:
        if name not in weights:
            raise ValueError(
                f"environment {name!r} has no weight: weights= gives every bundled environment one"
            )
        weight, value = weights[name], Fraction(0)
        if isinstance(weight, bool):  # a Real to Python, never meant as a weight
            pass
        elif isinstance(weight, numbers.Integral):
            value = Fraction(int(weight))
        elif isinstance(weight, numbers.Real) and math.isfinite(weight):
            value = Fraction(str(float(weight)))  # 0.1 means one tenth, not its binary cousin
        if value <= 0:
            raise ValueError(f"weights[{name!r}] must be a positive number, got {weight!r}")
        exact[name] = value
    return exact


def shares(weights: Mapping[str, Fraction], block: int) -> dict[str, int]:
    """Each environment's rows per block of ``block`` rows, by largest remainder: they sum
    to ``block``, and each is its exact quota rounded down or up."""
    total = sum(weights.values())
    quota = {name: block * w / total for name, w in weights.items()}
    counts = {name: math.floor(q) for name, q in quota.items()}
    order = list(weights)
    ranked = sorted(order, key=lambda n: (counts[n] - quota[n], -weights[n], order.index(n)))
    for name in ranked[: block - sum(counts.values())]:
        counts[name] += 1
    return counts


def _passes(name: str, size: int, seed: int) -> Iterator[int]:
    done = 0
    while True:
        rows = list(range(size))
        random.Random(f"{seed}:{name}:{done}").shuffle(rows)
        yield from rows
        done += 1


def plan(
    sizes: Mapping[str, int | None],
    weights: Mapping[str, object],
    *,
    block: int | None,
    seed: int | None = None,
    blocks: int | None = None,
) -> list[Row]:
    """``(environment, row of its dataset)`` for each row of the bundle; the row is ``None``
    for an environment whose size is ``None`` (it chooses its own tasks). A bad setting is a
    one-line ``ValueError`` naming it. ``blocks`` defaults to the fewest blocks in which every
    environment with a dataset shows each of its rows once; required when none has one."""
    exact = check_weights(list(sizes), weights)
    given: dict[str, object] = {"block": block, "blocks": blocks, "seed": seed}
    for key, value in given.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"{key}= must be a whole number, got {value!r}")
        if isinstance(value, int) and key != "seed" and value < 1:
            raise ValueError(f"{key}= must be at least 1, got {value}")
    if block is None:
        raise ValueError(
            "weights= needs block=: the rows per block in which the shares are exact "
            "(TRL: generation_batch_size // num_generations)"
        )
    for name, n in sizes.items():
        if n == 0:
            raise ValueError(
                f"dataset {name!r} has no rows: a weighted environment needs tasks "
                "(or None, to choose its own)"
            )
    owned = [name for name, n in sizes.items() if n is None]
    world = identity().world_size
    if owned and world > 1:
        raise ValueError(
            f"environment {owned[0]!r} chooses its own tasks (a dataset of None), which a run "
            f"of {world} processes cannot keep in whole GRPO groups: give it load_tasks(...)"
        )
    counts = shares(exact, block)
    for name, count in counts.items():
        if count == 0:
            raise ValueError(
                f"block={block} gives environment {name!r} no row: its weight is under one "
                f"row's share; raise block= or its weight"
            )
    if blocks is None:
        sized = [math.ceil(n / counts[name]) for name, n in sizes.items() if n is not None]
        if not sized:
            raise ValueError(
                "no bundled environment has a dataset (each chooses its own tasks): pass "
                "blocks= for the number of blocks"
            )
        blocks = max(sized)
    seed = 0 if seed is None else seed
    streams = {name: _passes(name, n, seed) for name, n in sizes.items() if n is not None}
    slots = [name for name in exact for _ in range(counts[name])]
    rows: list[Row] = []
    for at in range(blocks):
        order = list(slots)
        random.Random(f"{seed}:block:{at}").shuffle(order)
        rows += [(name, next(streams[name]) if name in streams else None) for name in order]
    return rows

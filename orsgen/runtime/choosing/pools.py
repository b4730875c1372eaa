"""Which pool each of a curriculum's tasks is in, kept up to date one move at a time, and the
curriculum's small records. Each pool is a Fenwick tree of 0/1 over the candidate positions: size in O(1), k-th member
in O(log n), in candidate order, never move order, so processes that hold the same pools
draw the same task from the same random number.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

POOLS = ("unseen", "learning", "solved", "unsolved")
_INDEX = {p: i for i, p in enumerate(POOLS)}


@dataclass(frozen=True)
class Weights:
    """How often each pool is drawn from, per task (relative)."""

    unseen: float = 4.0
    learning: float = 1.0
    solved: float = 0.01
    unsolved: float = 0.01

    def of(self, pool: str) -> float:
        return float(getattr(self, pool))


@dataclass
class Group:
    """One GRPO group's outcomes: its task and each rollout's reward (``None`` unscored)."""

    group: int
    task: int
    rewards: list[float | None] = field(default_factory=lambda: [])

    @property
    def scored(self) -> list[float]:
        return [r for r in self.rewards if r is not None]

    @property
    def zero_variance(self) -> bool:
        """All its scored rollouts got the same reward: no advantage for GRPO."""
        scored = self.scored
        return bool(scored) and max(scored) == min(scored)


@dataclass
class Window:

    rollouts: dict[str, int] = field(default_factory=lambda: {p: 0 for p in POOLS})
    groups: int = 0
    zero_variance: int = 0


class _Members:
    """A set of positions 0..n-1: add, remove, size and the k-th smallest in O(log n)."""

    def __init__(self, n: int, full: bool) -> None:
        self.n, self.size = n, n if full else 0
        # tree[j] counts members among positions (j - lowbit(j), j]; all ones: lowbit(j).
        self._tree = array("q", (j & -j for j in range(n + 1)) if full else bytes(8 * (n + 1)))
        self._top = 1 << (n.bit_length() - 1) if n else 0

    def add(self, position: int, delta: int) -> None:
        j, tree, n = position + 1, self._tree, self.n
        while j <= n:
            tree[j] += delta
            j += j & -j
        self.size += delta

    def kth(self, k: int) -> int:
        """The position of the ``k``-th member (0-based, smallest position first)."""
        if not 0 <= k < self.size:
            raise IndexError(f"member {k} of {self.size}")
        position, step, tree = 0, self._top, self._tree
        while step:
            probe = position + step
            if probe <= self.n and tree[probe] <= k:
                position, k = probe, k - tree[probe]
            step >>= 1
        return position  # the 1-based probe past the last smaller prefix is 0-based here


class Pools:

    def __init__(self, tasks: Sequence[int]) -> None:
        self.tasks = list(tasks)
        self._position = {t: i for i, t in enumerate(self.tasks)}
        n = len(self.tasks)
        self._of = bytearray(n)  # each position's pool index (0: unseen)
        self._members = [_Members(n, full=p == 0) for p in range(len(POOLS))]

    def __contains__(self, task: object) -> bool:
        return task in self._position

    def of(self, task: int) -> str:
        """``task``'s pool (``unseen`` for a task that is not a candidate)."""
        position = self._position.get(task)
        return POOLS[0] if position is None else POOLS[self._of[position]]

    def move(self, task: int, pool: str) -> None:
        position, target = self._position[task], _INDEX[pool]
        source = self._of[position]
        if source != target:
            self._members[source].add(position, -1)
            self._members[target].add(position, 1)
            self._of[position] = target

    def size(self, pool: str) -> int:
        return self._members[_INDEX[pool]].size

    def counts(self) -> dict[str, int]:
        return {p: self._members[i].size for i, p in enumerate(POOLS)}

    def kth(self, pool: str, k: int) -> int:
        return self.tasks[self._members[_INDEX[pool]].kth(k)]

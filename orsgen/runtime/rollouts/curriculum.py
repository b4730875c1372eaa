"""A pass-rate curriculum for environment-owned tasks (``train_dataset=None``).

A GRPO group whose rollouts all score alike (always solved, or never) has zero advantage:
it costs a group of rollouts and teaches nothing. With environment-owned data the adapter
chooses every task, so it can spend groups where they teach:

- **pools**, from each task's recent *scored* groups (the last ``window``): a rollout
  *passes* by the one pass rule (:func:`orsgen.runtime.passk.passes` with the adapter's
  ``pass_threshold``, which ``ors/pass@k`` and the task table use too); a task is ``solved`` when every
  recent scored rollout passed, ``unsolved`` when none did, ``learning`` otherwise, and
  ``unseen`` before its first scored group. Unfinished and failed rollouts (reward
  ``None``) say nothing about the task: they never count as failures.
- **selection**, one choice per GRPO group: the first pass visits every task once in a
  seeded order (unseen first); after it, a task is drawn with its pool's weight
  (``learning`` 1, ``solved`` / ``unsolved`` 0.01, ``unseen`` 4 by default). Rarely is not
  never: a task last chosen more than ``revisit`` groups ago is due and
  is chosen before any other, so a task the model starts or stops solving comes back.
- **reproducible and order-free**: groups are planned in order, each from the seed, its
  index (random draws use ``Random(f"{seed}:{g}")``), the groups planned before it and
  the outcomes observed so far, kept in group order, never in the order they arrived.
  Processes that observe the same outcomes before planning the same groups therefore
  choose the same task for the same group (:meth:`PassRateCurriculum.plan_through`).

Pure: no I/O, no clock. :meth:`PassRateCurriculum.state_dict` is JSON-able.
"""

from __future__ import annotations

import bisect
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orsgen.runtime.passk import PASS_THRESHOLD, check_threshold, passes

POOLS = ("unseen", "learning", "solved", "unsolved")
KEEP_PLANNED = 4096  # planned groups remembered (a group is chosen within a generation)


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
    """What the curriculum did since its metrics were last drained."""

    rollouts: dict[str, int] = field(default_factory=lambda: {p: 0 for p in POOLS})
    groups: int = 0
    zero_variance: int = 0


class PassRateCurriculum:
    """Chooses one task per GRPO group from the tasks' recent pass rates.

    Args:
        weights: relative draw weight per pool (:class:`Weights`).
        window: how many recent scored groups of a task decide its pool.
        revisit: a task last chosen more than this many groups ago is due
            and is chosen first; ``None`` means five times the number of tasks.
    """

    name = "pass_rate"

    def __init__(
        self,
        weights: Weights | Mapping[str, float] | None = None,
        window: int = 2,
        revisit: int | None = None,
    ) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        if revisit is not None and revisit < 1:
            raise ValueError(f"revisit must be at least 1, got {revisit}")
        self.weights = weights if isinstance(weights, Weights) else Weights(**(weights or {}))
        if any(self.weights.of(p) < 0 for p in POOLS) or self.weights.learning <= 0:
            raise ValueError(f"weights must be >= 0 and learning > 0, got {self.weights}")
        self.window, self.revisit_after = window, revisit
        # The pass rule's threshold: the adapter's pass_threshold, given at start().
        self.threshold = PASS_THRESHOLD
        self.tasks: list[int] = []
        self.seed = 0
        self.group_size = 1
        self._first_pass: list[int] = []
        self._history: dict[int, list[Group]] = {}  # task -> its scored groups, in group order
        self._open: dict[int, Group] = {}  # group -> outcomes still arriving
        self._plan: dict[int, int] = {}  # group -> its task, for the recent planned groups
        self._planned = 0  # groups 0 .. _planned - 1 are planned
        self._last_chosen: dict[int, int] = {}  # task -> the last group planned on it
        self._window = Window()
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (AsyncGRPO pickles the environment factory into its rollout child)."""
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def parameters(self) -> dict[str, Any]:
        return {
            "weights": {p: self.weights.of(p) for p in POOLS},
            "window": self.window,
            "pass_threshold": self.threshold,
            "revisit": self.revisit_after,
        }

    def start(
        self,
        tasks: Sequence[int],
        seed: int,
        group_size: int,
        pass_threshold: float = PASS_THRESHOLD,
    ) -> None:
        """Bind the curriculum to its candidate tasks, seed, GRPO group size and the pass
        rule's threshold (the adapter's ``pass_threshold``)."""
        if not tasks:
            raise ValueError("a curriculum needs at least one task")
        if group_size < 1:
            raise ValueError(f"group_size must be at least 1, got {group_size}")
        threshold = check_threshold(pass_threshold)
        with self._lock:
            binding = ([int(t) for t in tasks], int(seed), group_size, threshold)
            if self.tasks and self._planned:  # restored from a checkpoint: continue there
                if binding != (self.tasks, self.seed, self.group_size, self.threshold):
                    raise ValueError(
                        "this curriculum was started for other tasks, seed, group size or "
                        f"pass threshold ({len(self.tasks)} tasks, seed={self.seed}, "
                        f"group_size={self.group_size}, pass_threshold={self.threshold}): one "
                        "curriculum serves one stream of tasks"
                    )
                return
            self.tasks, self.seed, self.group_size, self.threshold = binding
            self._first_pass = list(self.tasks)
            random.Random(f"{self.seed}:first").shuffle(self._first_pass)
            self._history = {t: [] for t in self.tasks}
            self._open, self._plan, self._planned, self._last_chosen = {}, {}, 0, {}

    @property
    def next_group(self) -> int:
        """The first group never planned: where a resumed run's groups continue."""
        return self._planned

    @property
    def revisit(self) -> int:
        return self.revisit_after if self.revisit_after is not None else 5 * len(self.tasks)

    # -- statistics ---------------------------------------------------------------------

    def pool(self, task: int) -> str:
        """The task's pool from its last ``window`` scored groups."""
        with self._lock:
            recent = self._history.get(task, [])[-self.window :]
            scored = [r for g in recent for r in g.scored]
            if not scored:
                return "unseen"
            passed = sum(1 for r in scored if passes(r, self.threshold))
            if passed == len(scored):
                return "solved"
            return "unsolved" if passed == 0 else "learning"

    def pools(self) -> dict[str, int]:
        """How many tasks each pool holds."""
        with self._lock:
            out = {p: 0 for p in POOLS}
            for task in self.tasks:
                out[self.pool(task)] += 1
            return out

    def observe(self, group: int, task: int, reward: float | None) -> None:
        """One settled rollout of ``group`` (on ``task``): its reward, or ``None`` when it
        was unfinished or failed. A group closes when ``group_size`` outcomes arrived."""
        with self._lock:
            found = self._open.setdefault(group, Group(group, task))
            found.rewards.append(None if reward is None else float(reward))
            if len(found.rewards) >= self.group_size:
                self._close(self._open.pop(group))

    def _close(self, done: Group) -> None:
        if not done.scored or done.task not in self._history:
            return  # nothing scored: the task is no better known than before
        self._window.groups += 1
        self._window.zero_variance += int(done.zero_variance)
        history = self._history[done.task]
        keys = [g.group for g in history]
        history.insert(bisect.bisect(keys, done.group), done)
        del history[: -max(self.window, 1)]  # only the recent groups are ever read

    # -- selection ----------------------------------------------------------------------

    def choose(self, group: int) -> int:
        """The task of GRPO group ``group`` (0, 1, 2, ... over the run)."""
        with self._lock:
            if not self.tasks:
                raise RuntimeError("the curriculum was never started (start(tasks, ...))")
            self.plan_through(group)
            task = self._plan.get(group)
            if task is None:  # planned so long ago that it was forgotten
                raise ValueError(f"group {group} was planned too long ago to choose again")
            self._window.rollouts[self.pool(task)] += self.group_size
            return task

    def plan_through(self, group: int) -> None:
        """Plan every group up to ``group`` with what is known now. Several processes call
        this for the last group of a generation before they apply its outcomes, so the
        groups another process served are planned from the same statistics everywhere."""
        with self._lock:
            while self._planned <= group:
                g = self._planned
                task = self._first_pass[g] if g < len(self._first_pass) else self._draw(g)
                self._plan[g], self._last_chosen[task] = task, g
                self._planned += 1
            for old in [g for g in self._plan if g < self._planned - KEEP_PLANNED]:
                del self._plan[old]

    def _draw(self, group: int) -> int:
        rng = random.Random(f"{self.seed}:{group}")
        last = {t: self._last_chosen.get(t, -1) for t in self.tasks}
        due = [t for t in self.tasks if group - last[t] > self.revisit]
        if due:  # the most overdue first; ties broken by the seeded draw
            oldest = min(last[t] for t in due)
            return rng.choice([t for t in due if last[t] == oldest])
        weights = [self.weights.of(self.pool(t)) for t in self.tasks]
        if not any(weights):
            return rng.choice(self.tasks)
        return rng.choices(self.tasks, weights=weights)[0]

    # -- metrics and state --------------------------------------------------------------

    def drain(self) -> Window:
        """What happened since the last drain, and a new window."""
        with self._lock:
            window, self._window = self._window, Window()
            return window

    def metrics(self, window: Window) -> dict[str, float]:
        """``ors/curriculum/*``: tasks per pool, share of rollouts per pool, and the share
        of zero-variance groups among the scored groups of ``window``."""
        out = {f"ors/curriculum/tasks_{p}": float(n) for p, n in self.pools().items()}
        spent = sum(window.rollouts.values())
        if spent:
            for p, n in window.rollouts.items():
                out[f"ors/curriculum/rollouts_{p}_frac"] = n / spent
        if window.groups:
            out["ors/curriculum/zero_var_frac"] = window.zero_variance / window.groups
        return out

    def state_dict(self) -> dict[str, Any]:
        """Everything :meth:`load_state_dict` needs to continue exactly here (JSON-able)."""
        with self._lock:

            def rows(groups: Sequence[Group]) -> list[list[Any]]:
                return [[g.group, g.task, list(g.rewards)] for g in groups]

            return {
                "name": self.name,
                "parameters": self.parameters(),
                "tasks": list(self.tasks),
                "seed": self.seed,
                "group_size": self.group_size,
                "history": rows([g for t in self.tasks for g in self._history[t]]),
                "open": rows([self._open[k] for k in sorted(self._open)]),
                "planned": self._planned,
                "plan": [[g, self._plan[g]] for g in sorted(self._plan)],
                "last_chosen": [[t, self._last_chosen[t]] for t in sorted(self._last_chosen)],
            }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from a :meth:`state_dict` (of a curriculum with the same tasks)."""
        with self._lock:
            if state.get("name") != self.name:
                raise ValueError(f"not a {self.name} curriculum state: {state.get('name')!r}")
            parameters = state["parameters"]
            self.weights = Weights(**parameters["weights"])
            self.window = int(parameters["window"])
            self.revisit_after = parameters["revisit"]
            threshold = parameters.get("pass_threshold", parameters.get("threshold"))
            self.tasks, self._planned = [], 0  # a fresh start, then the saved state
            self.start(state["tasks"], state["seed"], state["group_size"], float(threshold))
            for group, task, rewards in state["history"]:
                self._history[task].append(Group(group, task, list(rewards)))
            for history in self._history.values():
                history.sort(key=lambda g: g.group)
            self._open = {g: Group(g, t, list(r)) for g, t, r in state["open"]}
            self._planned = int(state["planned"])
            self._plan = {int(g): int(t) for g, t in state["plan"]}
            self._last_chosen = {int(t): int(g) for t, g in state["last_chosen"]}


def report(curricula: Sequence[PassRateCurriculum]) -> dict[str, float]:
    """The ``ors/curriculum/*`` metrics of ``curricula`` together, each drained."""
    if not curricula:
        return {}
    total, pools = Window(), {p: 0 for p in POOLS}
    for one in curricula:
        window = one.drain()
        total.groups += window.groups
        total.zero_variance += window.zero_variance
        for p in POOLS:
            total.rollouts[p] += window.rollouts[p]
            pools[p] += one.pools()[p]
    out = curricula[0].metrics(total)
    out.update({f"ors/curriculum/tasks_{p}": float(n) for p, n in pools.items()})
    return out


def make(curriculum: object) -> PassRateCurriculum | None:
    """The curriculum an adapter's ``curriculum=`` names: ``None`` or ``"uniform"`` (the
    seeded uniform passes of :class:`~orsgen.runtime.rollouts.chooser.Chooser`), ``"pass_rate"`` with its
    defaults, or a :class:`PassRateCurriculum` with other parameters."""
    if curriculum is None or curriculum == "uniform":
        return None
    if curriculum == "pass_rate":
        return PassRateCurriculum()
    if isinstance(curriculum, PassRateCurriculum):
        return curriculum
    raise ValueError(
        f"curriculum must be None, 'uniform', 'pass_rate' or a PassRateCurriculum, got "
        f"{curriculum!r}"
    )

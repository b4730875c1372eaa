"""A pass-rate curriculum for environment-owned tasks (``train_dataset=None``): one task per
GRPO group, spent where groups teach, by the rules of docs/curriculum.md ("How the curriculum
chooses"). Group ``g`` is planned from ``Random(f"{seed}:{g}")`` and the outcomes in group
order, never arrival order, so processes that observe the same outcomes choose alike. Pure but
for reading a prior's files at construction: no clock.
"""

from __future__ import annotations

import bisect
import random
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from orsgen.runtime.choosing import prior as priors
from orsgen.runtime.choosing.pools import POOLS as POOLS
from orsgen.runtime.choosing.pools import Group as Group
from orsgen.runtime.choosing.pools import Pools
from orsgen.runtime.choosing.pools import Weights as Weights
from orsgen.runtime.choosing.pools import Window as Window
from orsgen.runtime.records.passk import PASS_THRESHOLD, check_threshold, passes

KEEP_PLANNED = 4096  # planned groups remembered (a group is chosen within a generation)


class PassRateCurriculum:
    """Chooses one task per GRPO group from the tasks' recent pass rates.

    Args:
        weights: relative draw weight per pool (:class:`Weights`).
        window: how many recent scored groups of a task decide its pool.
        revisit: a task last chosen more than this many groups ago is due
            and is chosen first; ``None`` means five times the number of tasks.
        prior: each task's pass rate before training: an ``orsgen eval`` run directory or
            a training trajectory file or directory (or a list of them), an
            ``orsgen.eval.EvalResult``, or a mapping from task index to pass rate
            (:func:`orsgen.runtime.choosing.prior.load`). A run's prior is refused by an
            adapter of another environment, split, tool hash or ``pass_threshold`` (of a
            trajectory: split or ``pass_threshold``).
    """

    name = "pass_rate"
    # One lock for the process's curricula: never pickled with one (AsyncGRPO pickles the
    # environment factory into its rollout child).
    _lock = threading.RLock()

    def __init__(
        self,
        weights: Weights | Mapping[str, float] | None = None,
        window: int = 2,
        revisit: int | None = None,
        prior: object = None,
    ) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        if revisit is not None and revisit < 1:
            raise ValueError(f"revisit must be at least 1, got {revisit}")
        self.weights = weights if isinstance(weights, Weights) else Weights(**(weights or {}))
        if any(self.weights.of(p) < 0 for p in POOLS) or self.weights.learning <= 0:
            raise ValueError(f"weights must be >= 0 and learning > 0, got {self.weights}")
        self.window, self.revisit_after = window, revisit
        self.prior = None if prior is None else priors.load(prior)
        # Every task's prior rate (the prior's, or a restored state's).
        self._prior_rates: dict[int, float] = dict(self.prior.rates) if self.prior else {}
        # The pass rule's threshold: the adapter's pass_threshold, given at start().
        self.threshold = PASS_THRESHOLD
        self.tasks: list[int] = []
        self.seed = 0
        self.group_size = 1
        self._shuffled: list[int] = []  # the tasks in the seeded order
        self._first_pass: list[int] = []
        self._prior: dict[int, float] = {}  # the candidates' prior rates
        self._pools = Pools([])
        self._history: dict[int, list[Group]] = {}  # task -> its scored groups, in group order
        self._open: dict[int, Group] = {}  # group -> outcomes still arriving
        self._plan: dict[int, int] = {}  # group -> its task, for the recent planned groups
        self._planned = 0  # groups 0 .. _planned - 1 are planned
        # The run's one group counter (the Chooser numbers its resets' groups from it): the
        # group its stream's first reset opened, 0 unless the stream began after a restore.
        self.first_group = 0
        # task -> the last group planned on it (-1: never), the least recent first.
        self._last: OrderedDict[int, int] = OrderedDict()
        self._window = Window()

    def parameters(self) -> dict[str, Any]:
        return {
            "weights": {p: self.weights.of(p) for p in POOLS},
            "window": self.window,
            "pass_threshold": self.threshold,
            "revisit": self.revisit_after,
        }

    def check_stream(self, stream: priors.Identity) -> None:
        """Refuse to serve a stream its prior was not measured on (an adapter calls this
        when it is constructed)."""
        if self.prior is not None:
            self.prior.check(stream)

    def start(
        self,
        tasks: Sequence[int],
        seed: int,
        group_size: int,
        pass_threshold: float = PASS_THRESHOLD,
    ) -> None:
        """Bind the curriculum to its candidate tasks, seed, GRPO group size and the pass
        rule's threshold (the adapter's ``pass_threshold``)."""
        threshold = check_threshold(pass_threshold)
        with self._lock:
            binding = (list(dict.fromkeys(int(t) for t in tasks)), int(seed), group_size)
            if self.tasks and self._planned:  # restored from a checkpoint: continue there
                bound = (self.tasks, self.seed, self.group_size, self.threshold)
                if (*binding, threshold) != bound:
                    raise ValueError(
                        "this curriculum was started for other tasks, seed, group size or "
                        f"pass threshold ({len(self.tasks)} tasks, seed={self.seed}, "
                        f"group_size={self.group_size}, pass_threshold={self.threshold}): one "
                        "curriculum serves one stream of tasks"
                    )
                self.first_group = self._planned  # a new stream continues after the plan
                return
            (self.tasks, self.seed, self.group_size), self.threshold = binding, threshold
            self._shuffled = list(self.tasks)
            random.Random(f"{self.seed}:first").shuffle(self._shuffled)
            self._pools = Pools(self.tasks)
            self._prior = {t: r for t, r in self._prior_rates.items() if t in self._pools}
            self._history, self._open, self._plan, self._planned = {}, {}, {}, 0
            self.first_group = 0
            for task in self._prior:
                self._pools.move(task, self._judge(task))
            self._first_pass = [t for t in self._shuffled if t not in self._prior]
            self._last = OrderedDict((t, -1) for t in self._shuffled)

    @property
    def revisit(self) -> int:
        return self.revisit_after if self.revisit_after is not None else 5 * len(self.tasks)

    def _judge(self, task: int) -> str:
        """The task's pool from its last ``window`` scored groups (and its prior until then)."""
        recent = self._history.get(task, [])[-self.window :]
        scored = [reward for group in recent for reward in group.scored]
        passed, total = sum(passes(r, self.threshold) for r in scored), len(scored)
        rate = self._prior.get(task) if len(recent) < self.window else None
        if total == 0 and rate is None:
            return "unseen"
        if passed == total and (rate is None or rate >= 1.0):
            return "solved"
        if passed == 0 and (rate is None or rate <= 0.0):
            return "unsolved"
        return "learning"

    def pool(self, task: int) -> str:
        """The task's pool."""
        with self._lock:
            return self._pools.of(task)

    def pools(self) -> dict[str, int]:
        """How many tasks each pool holds."""
        with self._lock:
            return self._pools.counts()

    def observe(self, group: int, task: int, reward: float | None) -> None:
        """One settled rollout of ``group`` (on ``task``): its reward, or ``None`` when it
        was unfinished or failed. A group closes when ``group_size`` outcomes arrived."""
        with self._lock:
            found = self._open.setdefault(group, Group(group, task))
            found.rewards.append(None if reward is None else float(reward))
            if len(found.rewards) >= self.group_size:
                self._close(self._open.pop(group))

    def _close(self, done: Group) -> None:
        if not done.scored or done.task not in self._pools:
            return  # nothing scored: the task is no better known than before
        self._window.groups += 1
        self._window.zero_variance += int(done.zero_variance)
        history = self._history.setdefault(done.task, [])
        bisect.insort(history, done, key=lambda g: g.group)
        del history[: -self.window]  # only the recent groups are ever read
        self._pools.move(done.task, self._judge(done.task))

    def choose(self, group: int) -> int:
        """The task of GRPO group ``group`` (0, 1, 2, ... over the run)."""
        with self._lock:
            if not self.tasks:
                raise RuntimeError("the curriculum was never started (start(tasks, ...))")
            self.plan_through(group)
            task = self._plan.get(group)
            if task is None:
                raise ValueError(f"group {group} was planned too long ago to choose again")
            self._window.rollouts[self._pools.of(task)] += self.group_size
            return task

    def plan_through(self, group: int) -> None:
        """Plan every group up to ``group`` with what is known now. Several processes call
        this for the last group of a generation before they apply its outcomes, so the
        groups another process served are planned from the same statistics everywhere."""
        with self._lock:
            while self._planned <= group:
                g = self._planned
                task = self._first_pass[g] if g < len(self._first_pass) else self._draw(g)
                self._plan[g] = task
                self._last[task] = g
                self._last.move_to_end(task)
                self._planned += 1
            plan, oldest = self._plan, self._planned - KEEP_PLANNED
            while plan and next(iter(plan)) < oldest:  # planned in order: oldest first
                del plan[next(iter(plan))]

    def _draw(self, group: int) -> int:
        rng = random.Random(f"{self.seed}:{group}")
        task, last = next(iter(self._last.items()))
        if group - last > self.revisit:  # the most overdue task is due
            return task
        pools = self._pools
        sizes = [self.weights.of(p) * pools.size(p) for p in POOLS]
        if not any(sizes):
            return self.tasks[rng.randrange(len(self.tasks))]
        pool = rng.choices(POOLS, weights=sizes)[0]
        return pools.kth(pool, rng.randrange(pools.size(pool)))

    def drain(self) -> Window:
        """What happened since the last drain, and a new window."""
        with self._lock:
            window, self._window = self._window, Window()
            return window

    def metrics(self, window: Window, pools: Mapping[str, int] | None = None) -> dict[str, float]:
        """``ors/curriculum/*``: tasks per pool, share of rollouts per pool, and the share
        of zero-variance groups among the scored groups of ``window``."""
        counts = self.pools() if pools is None else pools
        out = {f"ors/curriculum/tasks_{p}": float(counts[p]) for p in POOLS}
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

            chosen = sorted((t, g) for t, g in self._last.items() if g >= 0)
            return {
                "name": self.name,
                "parameters": self.parameters(),
                "tasks": list(self.tasks),
                "seed": self.seed,
                "group_size": self.group_size,
                "prior": [[t, self._prior[t]] for t in sorted(self._prior)],
                "history": rows([g for t in sorted(self._history) for g in self._history[t]]),
                "open": rows([self._open[k] for k in sorted(self._open)]),
                "planned": self._planned,
                "first_group": self.first_group,
                "plan": [[g, self._plan[g]] for g in sorted(self._plan)],
                "last_chosen": [[t, g] for t, g in chosen],
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
            self._prior_rates = {int(t): float(r) for t, r in state["prior"]}
            self.tasks, self._planned = [], 0  # a fresh start, then the saved state
            threshold = float(parameters["pass_threshold"])
            self.start(state["tasks"], state["seed"], state["group_size"], threshold)
            for group, task, rewards in state["history"]:
                self._history.setdefault(task, []).append(Group(group, task, list(rewards)))
            for task, history in self._history.items():
                history.sort(key=lambda g: g.group)
                self._pools.move(task, self._judge(task))
            self._open = {g: Group(g, t, list(r)) for g, t, r in state["open"]}
            self._planned = int(state["planned"])
            self.first_group = int(state["first_group"])
            self._plan = {int(g): int(t) for g, t in state["plan"]}
            last = {int(t): int(g) for t, g in state["last_chosen"]}
            rank = {t: i for i, t in enumerate(self._shuffled)}
            order = sorted(self._shuffled, key=lambda t: (last.get(t, -1), rank[t]))
            self._last = OrderedDict((t, last.get(t, -1)) for t in order)


def report(curricula: Sequence[PassRateCurriculum]) -> dict[str, float]:
    """The ``ors/curriculum/*`` metrics of ``curricula`` together, each drained once and
    its pools read once (O(1) per curriculum: pools are kept up to date)."""
    if not curricula:
        return {}
    total, pools = Window(), {p: 0 for p in POOLS}
    for one in curricula:
        window, counts = one.drain(), one.pools()
        total.groups += window.groups
        total.zero_variance += window.zero_variance
        for p in POOLS:
            total.rollouts[p] += window.rollouts[p]
            pools[p] += counts[p]
    return curricula[0].metrics(total, pools)


def make(curriculum: object) -> PassRateCurriculum | None:
    """The curriculum ``curriculum=`` names: ``None`` / ``"uniform"`` (the seeded uniform passes),
    ``"pass_rate"`` with its defaults, or a :class:`PassRateCurriculum`."""
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

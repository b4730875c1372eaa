"""Rollout health, counted per rollout and drained into the trainer's log (the figures and
how each trainer averages them: docs/training.md, "Rollout health in the trainer's log").

Every figure counts exactly the rollouts it is logged for: ``outcome_reward`` logs its batch
(:func:`emit`, each figure ``num / den`` logged ``den`` times, so GRPOTrainer's mean over the
ranks is exact per generation; its ``log()`` then gives a mean of per-generation figures);
``get_reward()`` counts into the process window, which :meth:`Accumulator.drain_rates`
sends to AsyncGRPO as ``(numerator, denominator)`` pairs, exact over its logging window.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields

from orsgen.runtime.errors import describe
from orsgen.runtime.records.passk import passes
from orsgen.runtime.records import trainer_facts
from orsgen.runtime.records.episode import STOPS, Outcome, ToolUse, Usage
from orsgen.runtime.sessions import pool
from orsgen.runtime.transport.process import current

Rate = tuple[float, float]


@dataclass
class Window:
    """The counts of one logging window (of one environment, or pooled)."""

    rollouts: int = 0
    scored: int = 0
    unfinished: int = 0
    failed: int = 0
    finished: int = 0
    lost: int = 0
    degraded: int = 0
    drifted: int = 0
    passed: int = 0
    rewarded: int = 0
    reward_sum: float = 0.0
    calls: int = 0
    failed_calls: int = 0
    env_failed_calls: int = 0
    resets: int = 0
    reset_seconds: float = 0.0
    call_seconds: float = 0.0
    tools: dict[str, ToolUse] = field(default_factory=lambda: {})
    stops: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STOPS, 0))

    def count(self, outcome: Outcome, passed: bool = False) -> None:
        """Count one rollout's outcome (``passed``: by its adapter's pass rule), reset and calls."""
        self.rollouts += 1
        self.finished += int(outcome.finished)
        setattr(self, outcome.kind, getattr(self, outcome.kind) + 1)
        self.lost += int(outcome.reason == "lost_session")
        self.degraded += int(outcome.reason == "unavailable")
        self.drifted += int(outcome.drifted)
        self.passed += int(passed)
        self.stops[outcome.stop] += 1
        if outcome.reward is not None:
            self.rewarded += 1
            self.reward_sum += outcome.reward
        used = outcome.usage
        for name in _SUMMED:  # the fields a Window and a Usage share
            setattr(self, name, getattr(self, name) + getattr(used, name))
        for name, use in used.tools.items():
            self.tools[name] = self.tools.get(name, ToolUse()) + use

    def rates(self, prefix: str = "ors/", tools: bool = True) -> dict[str, Rate]:
        """Every figure as (numerator, denominator), keyed ``prefix + figure`` (with the
        per-tool ones when ``tools``); a mean or fraction over nothing is (0, 0)."""
        per_rollout: dict[str, float] = {
            "scored_frac": self.scored,
            "unfinished_frac": self.unfinished,
            "failed_frac": self.failed,
            "finished_frac": self.finished,
            "lost_frac": self.lost,
            "degraded_frac": self.degraded,
            "drift": self.drifted,
            "calls_per_rollout": self.calls,
            "pass@1": self.passed,
        }
        per_call: dict[str, float] = {
            "tool_error_frac": self.failed_calls,
            "env_error_frac": self.env_failed_calls,
            "model_error_frac": self.failed_calls - self.env_failed_calls,
            "tool_call_s": self.call_seconds,
        }
        n = float(self.rollouts)
        out = {prefix + k: (float(v), n) for k, v in per_rollout.items()}
        out.update({prefix + k: (float(v), float(self.calls)) for k, v in per_call.items()})
        out.update({f"{prefix}stop/{k}": (float(v), n) for k, v in self.stops.items()})
        out[prefix + "reset_s"] = (self.reset_seconds, float(self.resets))
        out[prefix + "reward_mean"] = (self.reward_sum, float(self.rewarded))
        for name, tool in self.tools.items() if tools else ():
            key = f"{prefix}tool/{name}/"
            out[key + "calls_per_rollout"] = (float(tool.calls), n)
            out[key + "error_frac"] = (float(tool.failed), float(tool.calls))
            out[key + "call_s"] = (tool.seconds, float(tool.calls))
        return out


_SUMMED = [f.name for f in fields(Usage) if f.name != "tools"]


class Counts:
    """A window's counts: pooled, and per environment when several train. ``environments``
    are the run's (every one gets its figures, a ``rollout_frac`` of 0 when it ran none)."""

    def __init__(self, environments: Iterable[str] = ()) -> None:
        self.pooled = Window()
        self.by_env: dict[str, Window] = {name: Window() for name in environments}

    def count(self, outcome: Outcome, passed: bool = False) -> None:
        self.pooled.count(outcome, passed)
        if outcome.environment is not None:
            self.by_env.setdefault(outcome.environment, Window()).count(outcome, passed)

    @staticmethod
    def of(
        outcomes: Sequence[Outcome], passed: Sequence[bool], environments: Iterable[str] = ()
    ) -> Counts:
        counts = Counts(environments)
        for outcome, passing in zip(outcomes, passed, strict=True):
            counts.count(outcome, passing)
        return counts

    def rates(self) -> dict[str, Rate]:
        """Every figure as (numerator, denominator): the pooled ones, then each environment's under
        ``ors/<env>/`` with its per-tool figures and ``rollout_frac``."""
        out = self.pooled.rates(tools=not self.by_env)
        for name, window in sorted(self.by_env.items()):
            out.update(window.rates(f"ors/{name}/"))
            out[f"ors/{name}/rollout_frac"] = (float(window.rollouts), float(self.pooled.rollouts))
        return out

    def totals(self) -> dict[str, float]:
        """The rollouts of the window, pooled and per environment (GRPOTrainer's)."""
        out = {"ors/rollouts": float(self.pooled.rollouts)}
        out.update({f"ors/{k}/rollouts": float(w.rollouts) for k, w in self.by_env.items()})
        return out

    def values(self) -> dict[str, float]:
        """The figures as plain floats; a fraction or mean over nothing is left out."""
        out = {k: num / den for k, (num, den) in self.rates().items() if den}
        out.update(self.totals())
        return out


# Gauges, read from their owners (the pool) when a window is drained.
_gauges: dict[str, Callable[[], float]] = {}


def _open_sessions() -> float:
    return float(sum(1 for slot in pool.sessions().held() if slot.session is not None))


def gauge(name: str, read: Callable[[], float]) -> None:
    """Report ``read()`` as ``name`` with every drained window."""
    _gauges[name] = read


gauge("ors/open_sessions", _open_sessions)


# Sources of several metrics at once, each drained with every window.
_sources: list[Callable[[], dict[str, float]]] = []


def source(read: Callable[[], dict[str, float]]) -> None:
    """Report ``read()``'s metrics with every drained window (``read`` drains its own)."""
    _sources.append(read)


_failed: set[str] = set()  # the gauges and sources already warned about


def _read_gauges() -> dict[str, float]:
    out: dict[str, float] = {}
    for read_many in list(_sources):
        try:
            out.update(read_many())
        except Exception as exc:  # noqa: BLE001 - a metric never breaks the reward path
            _warn_once(getattr(read_many, "__qualname__", repr(read_many)), exc)
    for name, read in list(_gauges.items()):
        try:
            out[name] = float(read())
        except Exception as exc:  # noqa: BLE001 - a gauge never breaks the reward path
            _warn_once(name, exc)
    return out


def _warn_once(name: str, exc: Exception) -> None:
    """A metric that cannot be read is left out of the log: say so, once per metric."""
    if name not in _failed:
        _failed.add(name)
        warnings.warn(
            f"metric {name} is left out of the log: reading it failed ({describe(exc)})",
            stacklevel=2,
        )


class Accumulator:
    """One process's counts since the last drain (a forked child starts from zero), and the run's
    environments when several train. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.environments: tuple[str, ...] = ()
        self._window = Counts()

    def expect(self, environments: Sequence[str]) -> None:
        """The run trains on ``environments`` (none: one): each gets its figures in every window."""
        with self._lock:
            self.environments = tuple(environments)
            for name in self.environments:
                self._window.by_env.setdefault(name, Window())

    def rollout_done(self, outcome: Outcome, threshold: float | None = None) -> None:
        """Count a settled rollout (it passes by ``threshold``, when one is given)."""
        passed = threshold is not None and passes(outcome.reward, threshold)
        with self._lock:
            self._window.count(outcome, passed)

    def _take(self) -> Counts:
        with self._lock:
            window = self._window
            self._window = Counts(self.environments)
            return window

    discard = _take  # a new window, the old one's counts dropped (the sources not drained)

    def drain(self) -> dict[str, float]:
        """The window's metrics as plain floats, with the gauges, and a new window."""
        return {**self._take().values(), **_read_gauges()}

    def drain_rates(self) -> dict[str, float | Rate]:
        """The window's metrics as AsyncGRPO rates, with the gauges, and a new window. A rate over
        nothing (0, 0) is left out: it adds nothing to the sums, and an absent key is not a NaN."""
        rates = self._take().rates().items()
        out: dict[str, float | Rate] = {k: rate for k, rate in rates if rate[1]}
        out.update(_read_gauges())
        return out


def counts() -> Accumulator:
    return current().part(Accumulator)


def push_to_worker() -> bool:
    """In AsyncGRPO's rollout child, send this process's window to the worker's metrics queue
    (the trainer's ``log()`` drains it); ``False`` (and nothing drained) anywhere else."""
    queue = trainer_facts.worker_metrics_queue()
    if queue is None:
        return False
    try:
        queue.put_nowait(counts().drain_rates())
    except Exception:  # noqa: BLE001 - a full queue drops a window, as TRL's own pushes do
        return False
    return True


def emit(
    log_metric: Callable[[str, float], object],
    batch: Sequence[Outcome],
    thresholds: Sequence[float],
) -> None:
    """Log one scored batch through TRL's ``log_metric`` (GRPOTrainer's reward path), each rollout
    passing by its own threshold. A figure ``num / den`` is logged ``den`` times, so TRL's mean
    over the ranks is ``sum(num) / sum(den)``; counts and gauges once. The process window is
    drained, so a rollout settled before training never lands in a step."""
    counts().discard()  # not drain(): that would drain the sources before they are read
    passed = [passes(o.reward, t) for o, t in zip(batch, thresholds, strict=True)]
    window = Counts.of(batch, passed, counts().environments)
    for name, (num, den) in sorted(window.rates().items()):
        for _ in range(round(den)):
            log_metric(name, num / den)
    for name, value in sorted({**window.totals(), **_read_gauges()}.items()):
        log_metric(name, value)

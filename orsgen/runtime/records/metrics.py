"""Rollout health, counted per rollout and drained into the trainer's log.

Each settled rollout's :class:`~orsgen.runtime.episode.Outcome` carries its kind, its
lost or degraded session and its own reset and tool calls (failed, failed by the
environment; :mod:`orsgen.runtime.records.usage`), so every figure counts exactly the rollouts
it is logged for: ``outcome_reward`` logs its batch (:func:`emit`); ``get_reward()``
counts its rollout in the process window, which a drain returns as ``ors/*`` metrics
before it starts a new window. A scratch adapter's calls that no reward settled count
nowhere:

==========================  ==========================================================
``ors/rollouts``            rollouts in the window
``ors/scored_frac``         rollouts the environment scored (the scoring coverage)
``ors/unfinished_frac``     rollouts whose session worked but that never scored
``ors/failed_frac``         rollouts an infrastructure or grader failure left unscored
``ors/finished_frac``       rollouts whose episode finished
``ors/lost_frac``           rollouts whose session the server lost
``ors/degraded_frac``       rollouts that ran without an environment (server away)
``ors/tool_error_frac``     failed calls over calls
``ors/env_error_frac``      calls the environment failed over calls
``ors/model_error_frac``    calls the model got wrong (invalid arguments, ...) over calls
``ors/calls_per_rollout``   tool calls per rollout
``ors/reset_s``             mean seconds per reset
``ors/tool_call_s``         mean seconds per tool call
``ors/open_sessions``       sessions this process holds when the window is drained
``ors/drift``               rollouts whose task's live tools differ from the snapshot
==========================  ==========================================================

Two shapes: :meth:`Accumulator.drain` gives plain floats (``GRPOTrainer``'s ``log_metric``
averages them per logging step and across ranks); :meth:`Accumulator.drain_rates` gives
``(numerator, denominator)`` pairs, which AsyncGRPO's ``log()`` reduces as
``sum(num) / sum(den)`` over its window (``_reduce_metric`` in ``async_grpo_trainer.py``).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from orsgen.runtime.errors import describe
from orsgen.runtime.records import trainer_facts
from orsgen.runtime.records.episode import Outcome
from orsgen.runtime.sessions import pool
from orsgen.runtime.transport.process import current

Rate = tuple[float, float]


@dataclass
class Window:
    """The counts of one logging window."""

    rollouts: int = 0
    scored: int = 0
    unfinished: int = 0
    failed: int = 0
    finished: int = 0
    lost: int = 0
    degraded: int = 0
    drifted: int = 0
    calls: int = 0
    failed_calls: int = 0
    env_failed_calls: int = 0
    resets: int = 0
    reset_seconds: float = 0.0
    call_seconds: float = 0.0

    def count(self, outcome: Outcome) -> None:
        """Count one rollout's outcome, with its own reset and calls."""
        self.rollouts += 1
        self.finished += int(outcome.finished)
        setattr(self, outcome.kind, getattr(self, outcome.kind) + 1)
        self.lost += int(outcome.reason == "lost_session")
        self.degraded += int(outcome.reason == "unavailable")
        self.drifted += int(outcome.drifted)
        used = outcome.usage
        self.calls += used.calls
        self.failed_calls += used.failed_calls
        self.env_failed_calls += used.env_failed_calls
        self.call_seconds += used.call_seconds
        self.resets += used.resets
        self.reset_seconds += used.reset_seconds

    @staticmethod
    def of(outcomes: Sequence[Outcome]) -> Window:
        """The counts of exactly ``outcomes``."""
        window = Window()
        for outcome in outcomes:
            window.count(outcome)
        return window

    def rates(self) -> dict[str, Rate]:
        """Every metric as (numerator, denominator); a mean or fraction over nothing is
        (0, 0), which AsyncGRPO logs as NaN and :meth:`values` leaves out."""
        model_failed = self.failed_calls - self.env_failed_calls
        per_rollout: dict[str, float] = {
            "ors/scored_frac": self.scored,
            "ors/unfinished_frac": self.unfinished,
            "ors/failed_frac": self.failed,
            "ors/finished_frac": self.finished,
            "ors/lost_frac": self.lost,
            "ors/degraded_frac": self.degraded,
            "ors/drift": self.drifted,
            "ors/calls_per_rollout": self.calls,
        }
        per_call: dict[str, float] = {
            "ors/tool_error_frac": self.failed_calls,
            "ors/env_error_frac": self.env_failed_calls,
            "ors/model_error_frac": model_failed,
            "ors/tool_call_s": self.call_seconds,
        }
        out: dict[str, Rate] = {k: (float(v), float(self.rollouts)) for k, v in per_rollout.items()}
        out.update({k: (float(v), float(self.calls)) for k, v in per_call.items()})
        out["ors/reset_s"] = (self.reset_seconds, float(self.resets))
        return out

    def values(self) -> dict[str, float]:
        """The metrics as plain floats; a fraction or mean over nothing is left out."""
        out = {k: num / den for k, (num, den) in self.rates().items() if den}
        out["ors/rollouts"] = float(self.rollouts)
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
    """The counts of one process since the last drain (a
    :meth:`~orsgen.runtime.transport.process.Process.part`: a forked child starts from zero).
    Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._window = Window()

    def rollout_done(self, outcome: Outcome) -> None:
        with self._lock:
            self._window.count(outcome)

    def _take(self) -> Window:
        with self._lock:
            window = self._window
            self._window = Window()
            return window

    def discard(self) -> None:
        """A new window; the old one's counts are dropped (the sources are not drained)."""
        self._take()

    def drain(self) -> dict[str, float]:
        """The window's metrics as plain floats, with the gauges, and a new window."""
        return {**self._take().values(), **_read_gauges()}

    def drain_rates(self) -> dict[str, float | Rate]:
        """The window's metrics as AsyncGRPO rates, with the gauges, and a new window."""
        out: dict[str, float | Rate] = dict(self._take().rates())
        out.update(_read_gauges())
        return out


def counts() -> Accumulator:
    """This process's counts."""
    return current().part(Accumulator)


def push_to_worker() -> bool:
    """In AsyncGRPO's rollout child, send this process's window to the worker's metrics
    queue, which the trainer's ``log()`` drains into ``trainer.state.log_history`` next to
    TRL's own ``env/*`` and ``tools/*`` metrics. ``False`` (and nothing drained) anywhere else."""
    queue = trainer_facts.worker_metrics_queue()
    if queue is None:
        return False
    try:
        queue.put_nowait(counts().drain_rates())
    except Exception:  # noqa: BLE001 - a full queue drops a window, as TRL's own pushes do
        return False
    return True


def emit(log_metric: Callable[[str, float], object], batch: Sequence[Outcome]) -> None:
    """Log one scored batch through TRL's ``log_metric`` (GRPOTrainer's reward path): the
    batch's own rollouts with their own calls and resets. The process window is drained,
    so a rollout settled outside a trainer (before training) never lands in a step."""
    counts().discard()  # not drain(): that would drain the sources before they are read
    window = Window.of(batch)
    for name, value in sorted({**window.values(), **_read_gauges()}.items()):
        log_metric(name, value)

"""The counts of one logging window, pooled and per environment, and the ``ors/*`` figures
they give (:mod:`orsgen.runtime.records.metrics` has the table and the two ways out).

Every figure is a rate, ``(numerator, denominator)``: per rollout (``scored_frac``,
``calls_per_rollout``, ``pass@1``, ...), per call (``tool_error_frac``, ``tool_call_s``, ...),
per reset (``reset_s``) or per rollout with a reward (``reward_mean``). A pooled figure is
therefore the mean of its per-environment figures weighted by their denominators: the
rollouts (``ors/<env>/rollout_frac`` gives each environment's share), the calls or the
rewarded rollouts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields

from orsgen.runtime.records.episode import Outcome, ToolUse, Usage

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

    def count(self, outcome: Outcome, passed: bool = False) -> None:
        """Count one rollout's outcome (``passed``: by its adapter's pass rule), with its
        own reset and calls."""
        self.rollouts += 1
        self.finished += int(outcome.finished)
        setattr(self, outcome.kind, getattr(self, outcome.kind) + 1)
        self.lost += int(outcome.reason == "lost_session")
        self.degraded += int(outcome.reason == "unavailable")
        self.drifted += int(outcome.drifted)
        self.passed += int(passed)
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
        """The counts of exactly ``outcomes``."""
        counts = Counts(environments)
        for outcome, passing in zip(outcomes, passed, strict=True):
            counts.count(outcome, passing)
        return counts

    def rates(self) -> dict[str, Rate]:
        """Every figure as (numerator, denominator): the pooled ones (with the per-tool
        figures when one environment trains), then each environment's under ``ors/<env>/``
        with its per-tool figures and its share of the rollouts, ``rollout_frac``."""
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

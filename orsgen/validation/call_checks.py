"""The checks judged call by call: ``trivial_reward``, ``reward_out_of_range``,
``server_error`` and ``finished_unscored``, and what every check's evidence is made of."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from orsgen.runtime.records.passk import passes
from orsgen.validation.plan import Observations, Session
from orsgen.validation.probe import Call
from orsgen.validation.result import Finding, Severity, json_number


@dataclass(frozen=True)
class Rules:
    """The thresholds the checks judge by (``--pass-threshold``, ``--reward-range``)."""

    pass_threshold: float = 1.0
    reward_range: tuple[float, float] = (0.0, 1.0)


def calls_json(calls: Sequence[Call]) -> list[dict[str, Any]]:
    return [c.evidence() for c in calls]


Judged = tuple[Severity, str] | None  # a call's finding: its severity and note


def _per_call(
    obs: Observations, check: str, judge: Callable[[Session, Call], Judged], whole: bool = True
) -> dict[tuple[str, int, str | None, str], Finding]:
    """One finding per task, tool and severity, at the first call ``judge`` finds, with the
    session's calls up to it (``whole``) or that call alone."""
    found: dict[tuple[str, int, str | None, str], Finding] = {}
    for session in obs.sessions:
        for i, call in enumerate(session.calls):
            judged = judge(session, call)
            if judged is None:
                continue
            key = (session.split, session.index, call.tool, judged[0])
            if key in found:
                continue
            calls = calls_json(session.calls[: i + 1] if whole else [call])
            evidence = {"calls": calls, "note": judged[1]}
            found[key] = Finding(
                check, judged[0], session.split, session.index, call.tool, evidence
            )
    return found


def trivial_reward(obs: Observations, rules: Rules) -> list[Finding]:
    """A degenerate session whose call earns at least the pass threshold."""

    def judge(session: Session, call: Call) -> Judged:
        if session.purpose != "degenerate" or not passes(call.reward, rules.pass_threshold):
            return None  # NaN passes no threshold
        return "error", (
            f"a degenerate action (minimal or seeded schema-valid arguments) earned "
            f"{json_number(call.reward)}, at least the pass threshold {rules.pass_threshold:g}"
        )

    return list(_per_call(obs, "trivial_reward", judge).values())


def reward_out_of_range(obs: Observations, rules: Rules) -> list[Finding]:
    """Every reward seen: NaN or infinite is an error, outside the range a warning."""
    low, high = rules.reward_range

    def judge(_: Session, call: Call) -> Judged:
        reward = call.reward
        if reward is None:
            return None
        if not math.isfinite(reward):
            return "error", f"the reward is {json_number(reward)}"
        if not low <= reward <= high:
            return "warning", f"the reward {reward:g} is outside --reward-range {low:g},{high:g}"
        return None

    return list(_per_call(obs, "reward_out_of_range", judge, whole=False).values())


def server_error(obs: Observations) -> list[Finding]:
    """A call (or a session open) answered by a server failure: one finding per task and
    tool (``null`` for an open)."""

    def judge(_: Session, call: Call) -> Judged:
        if call.kind != "server_failure":
            return None
        return "error", f"a schema-valid call was answered by a server failure ({call.failure})"

    found = _per_call(obs, "server_error", judge)
    for failed in obs.open_failures:
        key = (failed.split, failed.index, None, "error")
        if failed.failure is None or key in found:
            continue  # a refusal (4xx) is not a server failure
        note = f"opening a session failed ({failed.failure})"
        evidence: dict[str, Any] = {"calls": [], "session_open": failed.error, "note": note}
        found[key] = Finding("server_error", "error", failed.split, failed.index, None, evidence)
    return list(found.values())


def finished_unscored(obs: Observations) -> list[Finding]:
    def judge(_: Session, call: Call) -> Judged:
        if call.kind == "result" and call.finished and call.reward is None:
            return "warning", "the call returned finished with no reward: the rollout is unscored"
        return None

    return list(_per_call(obs, "finished_unscored", judge).values())

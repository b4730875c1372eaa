"""The checks judged call by call: ``trivial_reward``, ``reward_out_of_range``,
``server_error`` and ``finished_unscored``, and what every check's evidence is made of."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orsgen.runtime.records.passk import passes
from orsgen.validation.plan import Look, Observations, Session
from orsgen.validation.probe import Call
from orsgen.validation.result import Finding, Severity, json_number


@dataclass(frozen=True)
class Rules:
    """The thresholds the checks judge by (``--pass-threshold``, ``--reward-range``)."""

    pass_threshold: float = 1.0
    reward_range: tuple[float, float] = (0.0, 1.0)


def calls_json(calls: Sequence[Call]) -> list[dict[str, Any]]:
    return [c.evidence() for c in calls]


def finding(
    check: str,
    severity: Severity,
    session: Session | Look | None,
    tool: str | None,
    evidence: Mapping[str, Any],
) -> Finding:
    split = session.split if session is not None else None
    index = session.index if session is not None else None
    return Finding(check, severity, split, index, tool, evidence)


def _sessions_by_call(obs: Observations) -> list[tuple[Session, int, Call]]:
    return [(s, i, c) for s in obs.sessions for i, c in enumerate(s.calls)]


def trivial_reward(obs: Observations, rules: Rules) -> list[Finding]:
    """A degenerate session whose call earns at least the pass threshold: one finding per
    task and tool, at its first such call, with the session's calls up to it."""
    found: dict[tuple[str, int, str], Finding] = {}
    for session, i, call in _sessions_by_call(obs):
        if session.purpose != "degenerate" or call.reward is None or math.isnan(call.reward):
            continue
        key = (session.split, session.index, call.tool)
        if key in found or not passes(call.reward, rules.pass_threshold):
            continue
        note = (
            f"a degenerate action (minimal or seeded schema-valid arguments) earned "
            f"{json_number(call.reward)}, at least the pass threshold {rules.pass_threshold:g}"
        )
        evidence = {"calls": calls_json(session.calls[: i + 1]), "note": note}
        found[key] = finding("trivial_reward", "error", session, call.tool, evidence)
    return list(found.values())


def reward_out_of_range(obs: Observations, rules: Rules) -> list[Finding]:
    """Every reward seen: NaN or infinite is an error, outside the range a warning; one
    finding per task, tool and severity."""
    low, high = rules.reward_range
    found: dict[tuple[str, int, str, str], Finding] = {}
    for session, _, call in _sessions_by_call(obs):
        reward = call.reward
        if reward is None:
            continue
        if not math.isfinite(reward):
            severity: Severity = "error"
            note = f"the reward is {json_number(reward)}"
        elif not low <= reward <= high:
            severity = "warning"
            note = f"the reward {reward:g} is outside --reward-range {low:g},{high:g}"
        else:
            continue
        key = (session.split, session.index, call.tool, severity)
        if key not in found:
            evidence = {"calls": [call.evidence()], "note": note}
            found[key] = finding("reward_out_of_range", severity, session, call.tool, evidence)
    return list(found.values())


def server_error(obs: Observations) -> list[Finding]:
    """A call (or a session open) answered by a server failure: one finding per task and
    tool (``null`` for an open)."""
    found: dict[tuple[str, int, str | None], Finding] = {}
    for session, i, call in _sessions_by_call(obs):
        if call.kind != "server_failure":
            continue
        key: tuple[str, int, str | None] = (session.split, session.index, call.tool)
        if key not in found:
            note = f"a schema-valid call was answered by a server failure ({call.failure})"
            evidence: dict[str, Any] = {"calls": calls_json(session.calls[: i + 1]), "note": note}
            found[key] = finding("server_error", "error", session, call.tool, evidence)
    for failed in obs.open_failures:
        if failed.failure is None:
            continue  # a refusal (4xx) is not a server failure
        key = (failed.split, failed.index, None)
        if key not in found:
            note = f"opening a session failed ({failed.failure})"
            evidence = {"calls": [], "session_open": failed.error, "note": note}
            found[key] = Finding(
                "server_error", "error", failed.split, failed.index, None, evidence
            )
    return list(found.values())


def finished_unscored(obs: Observations) -> list[Finding]:
    found: dict[tuple[str, int, str], Finding] = {}
    for session, i, call in _sessions_by_call(obs):
        if call.kind == "result" and call.finished and call.reward is None:
            key = (session.split, session.index, call.tool)
            if key not in found:
                note = "the call returned finished with no reward: the rollout is unscored"
                evidence = {"calls": calls_json(session.calls[: i + 1]), "note": note}
                found[key] = finding("finished_unscored", "warning", session, call.tool, evidence)
    return list(found.values())

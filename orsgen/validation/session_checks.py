"""The checks judged on repeated calls: ``nondeterministic`` (fresh sessions, one after
another) and ``session_state_leak`` (two sessions of a task open at the same time)."""

from __future__ import annotations

from collections.abc import Sequence

from orsgen.validation.call_checks import calls_json
from orsgen.validation.plan import Observations, Session
from orsgen.validation.result import Finding, Severity


def _differences(runs: Sequence[Session]) -> tuple[list[int], list[int]]:
    """The calls at which the runs differ in their reward, and in their output; a run that
    ended earlier differs in its reward."""
    rewards: list[int] = []
    outputs: list[int] = []
    for at in range(max(len(r.calls) for r in runs)):
        first, *others = [r.calls[at] if at < len(r.calls) else None for r in runs]
        reward = output = False
        for other in others:
            if first is None or other is None:
                reward |= (first is None) != (other is None)
                continue
            same_reward, same_output = first.same(other)
            reward |= not same_reward
            output |= not same_output
        rewards += [at] if reward else []
        outputs += [at] if output else []
    return rewards, outputs


def nondeterministic(obs: Observations) -> list[Finding]:
    """The fresh runs ``F1``..``F3`` of a task (the same calls, fresh sessions) compared call
    by call: a different reward is an error, a different output a warning, each naming the
    first call (its tool) where they differ."""
    found: list[Finding] = []
    for split, index in sorted(obs.deep):
        runs = obs.fresh(split, index)
        if len(runs) < 2:
            continue
        rewards, outputs = _differences(runs)
        if not rewards and not outputs:
            continue
        severity: Severity = "error" if rewards else "warning"
        at = (rewards or outputs)[0]
        tool = next(r.calls[at].tool for r in runs if at < len(r.calls))
        what = "reward" if rewards else "output"
        evidence = {
            "runs": [calls_json(r.calls) for r in runs],
            "note": f"the same calls in fresh sessions gave a different {what} at call "
            f"{at + 1} ({tool})",
        }
        found.append(Finding("nondeterministic", severity, split, index, tool, evidence))
    return found


def session_state_leak(obs: Observations) -> list[Finding]:
    """``C`` (the calls ``X`` while ``B`` made others in a session open at the same time)
    against the fresh runs: at the first call where the fresh runs agree and ``C`` differs,
    the finding names that call's tool."""
    found: list[Finding] = []
    for split, index in sorted(obs.deep):
        runs, beside = obs.fresh(split, index), obs.of("beside", split, index)
        if len(runs) < 2 or not beside:
            continue
        rewards, outputs = _differences(runs)
        if rewards or outputs:
            continue  # not deterministic: nothing to compare a leak with
        other = obs.of("other", split, index)
        for at, call in enumerate(beside[0].calls[: len(runs[0].calls)]):
            if all(call.same(runs[0].calls[at])):
                continue
            evidence = {
                "fresh": calls_json(runs[0].calls[: at + 1]),
                "other_session": calls_json(other[0].calls if other else []),
                "beside": calls_json(beside[0].calls[: at + 1]),
                "note": f"call {at + 1} ({call.tool}) gave another result in a session open "
                "while another session of the task made other calls than in fresh sessions",
            }
            found.append(Finding("session_state_leak", "error", split, index, call.tool, evidence))
            break
    return found

"""A recorded rollout against its replays: one replay run row (pure, no I/O; the rules:
docs/replay.md). A call is an ``env_calls`` entry (``Call.replayable``); a training
trajectory's call has ``text_sha256`` too (its text is a preview), and results are compared
by that hash. A rollout has *changed* when **no** replay reproduces it
(:func:`orsgen.verdict.changed`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orsgen.jsonobject import as_array, as_object, is_array
from orsgen.runtime.records.episode import text_sha256
from orsgen.verdict import changed, differ, flip, pass_rate
from orsgen.wording import cut

Call = Mapping[str, Any]
# A replayed call the environment refused for what it was sent (the SDK's reasons): a tool
# that is gone, or arguments it no longer takes.
REFUSALS = ("unknown_tool", "invalid_arguments")
# A recorded failure that was the environment's own behaviour (replayed); any other failed
# rollout failed outside it (its reset, the model's endpoint, a lost session): not replayed.
ENVIRONMENT_FAILURES = ("tool_raised", "server_error")
# A recorded row's ``stop`` that replay cannot reproduce: the model's pace set it, not the
# environment (a rollout deadline passed), and its final reward is ``unfinished_reward``.
LIMITS = ("timeout",)
MAX_SHOWN = 2000  # characters of each result the side-by-side view keeps


@dataclass
class Replayed:
    """One replay of a rollout: its reward and verdict as an evaluation row has them, and
    its calls."""

    reward: float | None
    verdict: str
    reason: str | None
    calls: list[dict[str, Any]] = field(default_factory=lambda: [])
    seconds: float = 0.0


def calls_of(row: Mapping[str, Any]) -> list[Call] | None:
    """A row's recorded calls, or ``None`` when it records none (an older orsgen's row)."""
    found = row.get("env_calls")
    return [as_object(c) for c in as_array(found)] if is_array(found) else None


def not_replayed(row: Mapping[str, Any]) -> str | None:
    if row.get("verdict") != "failed":
        return None
    if any(c.get("error") in ENVIRONMENT_FAILURES for c in calls_of(row) or []):
        return None
    return (
        f"not replayed: the recorded rollout failed outside the environment ({row.get('reason')})"
    )


def finished_at(calls: Sequence[Call]) -> int | None:
    return next((i for i, c in enumerate(calls, 1) if c.get("finished")), None)


def _output(call: Call) -> tuple[Any, Any, Any]:
    """A call's result: its text by hash (a trajectory line records only that), its images'
    hashes and its error."""
    text = call.get("text_sha256") or text_sha256(str(call.get("text") or ""))
    return text, list(call.get("images") or []), call.get("error")


def outputs_changed(recorded: Sequence[Call], replayed: Sequence[Call]) -> int:
    """How many of the calls made both times got another text, images or error."""
    return sum(_output(a) != _output(b) for a, b in zip(recorded, replayed))


def refused(recorded: Sequence[Call], replayed: Sequence[Call]) -> list[dict[str, Any]]:
    """The calls the environment now refuses (and did not before), each with its reason."""
    return [
        {"call": i, "tool": b.get("tool"), "reason": b.get("text")}
        for i, (a, b) in enumerate(zip(recorded, replayed), 1)
        if b.get("error") in REFUSALS and a.get("error") != b.get("error")
    ]


def call_rewards(
    recorded: Sequence[Call], replayed: Sequence[Call], tolerance: float
) -> list[dict[str, Any]]:
    """The calls made both times (and not refused now) whose reward moved beyond
    ``tolerance``: ``{"call", "recorded", "replayed"}``."""
    return [
        {"call": i, "recorded": a.get("reward"), "replayed": b.get("reward")}
        for i, (a, b) in enumerate(zip(recorded, replayed), 1)
        if b.get("error") not in REFUSALS and differ(a.get("reward"), b.get("reward"), tolerance)
    ]


def agree(a: Replayed, b: Replayed, tolerance: float) -> bool:
    return (
        not differ(a.reward, b.reward, tolerance)
        and len(a.calls) == len(b.calls)
        and finished_at(a.calls) == finished_at(b.calls)
        and outputs_changed(a.calls, b.calls) == 0
        and not call_rewards(a.calls, b.calls, tolerance)
    )


def by_calls(recorded: Mapping[str, Any]) -> str | None:
    stop = recorded.get("stop")
    if stop not in LIMITS:
        return None
    return f"compared call by call: the recorded rollout stopped on {stop}, which replay cannot reproduce"


def row(
    recorded: Mapping[str, Any],
    replays: Sequence[Replayed],
    tolerance: float,
    threshold: float,
) -> dict[str, Any]:
    """The replay run's row of a recorded rollout (``replays``: at least one), the flip by
    the pass rule at ``threshold``."""
    first, calls = replays[0], calls_of(recorded) or []
    was, now = recorded.get("reward"), first.reward
    limit = by_calls(recorded)
    # Each kind of change, replay by replay: a kind changed when no replay reproduces it.
    moved = [call_rewards(calls, r.calls, tolerance) for r in replays]
    ends = [finished_at(r.calls) for r in replays]
    refusals = [refused(calls, r.calls) for r in replays]
    outputs = [outputs_changed(calls, r.calls) for r in replays]
    rewards = [r.reward for r in replays]
    kinds = {
        "reward": limit is None and changed(was, rewards, tolerance),
        "call_rewards": all(moved),
        "finished": all(e != finished_at(calls) for e in ends),
        "refused": all(refusals),
        "outputs": limit is not None and all(outputs),
    }
    reproduced = any(
        (limit is not None or not differ(was, r.reward, tolerance))
        and not m
        and e == finished_at(calls)
        and not x
        and (limit is None or not o)
        for r, m, e, x, o in zip(replays, moved, ends, refusals, outputs)
    )
    out: dict[str, Any] = {
        "task_index": recorded["task_index"],
        "sample": recorded["sample"],
        "split": recorded.get("split"),
        "recorded_reward": was,
        "reward": now,
        "recorded_verdict": recorded.get("verdict"),
        "verdict": first.verdict,
        "nondeterministic": any(not agree(first, r, tolerance) for r in replays[1:]),
        "outputs_changed": outputs[0],
        "refused": refusals[0] if kinds["refused"] else [],
        "call_rewards_changed": moved[0] if kinds["call_rewards"] else [],
        "calls": len(first.calls),
        "seconds": round(sum(r.seconds for r in replays), 4),
        "env_calls": first.calls,
        "messages": side_by_side(calls, first.calls),
    }
    if limit is not None:
        out["compared"] = limit
    if len(replays) > 1:
        out["replay_rewards"] = rewards
    if kinds["finished"]:
        out["finished_at"] = {"recorded": finished_at(calls), "replayed": ends[0]}
    out["reward_changed"] = kinds["reward"]
    out["changed"] = not reproduced
    turned = None
    if kinds["reward"]:
        turned = flip(pass_rate(was, threshold), [pass_rate(x, threshold) for x in rewards])
    out["flip"] = turned
    out["reason"] = _said(out, kinds["outputs"]) or first.reason
    return out


def skipped(recorded: Mapping[str, Any], why: str) -> dict[str, Any]:
    keys = ("task_index", "sample", "split")
    return {
        **{k: recorded.get(k) for k in keys},
        "recorded_reward": recorded.get("reward"),
        "reward": None,
        "recorded_verdict": recorded.get("verdict"),
        "verdict": "failed",
        "reason": why,
        "skipped": True,
        "nondeterministic": False,
        "outputs_changed": 0,
        "refused": [],
        "call_rewards_changed": [],
        "changed": False,
        "flip": None,
        "calls": 0,
        "messages": [],
    }


def _said(r: Mapping[str, Any], outputs: bool) -> str | None:
    """What changed, in one line: "reward 1.0 -> 0.0; call 1 reward 0.0 -> 0.5; ..."
    (``outputs``: the changed tool results are a change, as in a call-by-call comparison)."""
    parts: list[str] = [str(r["compared"])] if "compared" in r else []
    if r["nondeterministic"]:
        parts.append(f"nondeterministic: replays gave rewards {r['replay_rewards']}")
    if r.get("reward_changed"):
        parts.append(f"reward {r['recorded_reward']} -> {r['reward']}")
    parts += [
        f"call {x['call']} reward {x['recorded']} -> {x['replayed']}"
        for x in r["call_rewards_changed"]
    ]
    if "finished_at" in r:
        where = r["finished_at"]
        at = {k: "no call" if v is None else f"call {v}" for k, v in where.items()}
        parts.append(f"finished at {at['replayed']}, recorded at {at['recorded']}")
    if r["outputs_changed"]:
        parts.append(f"{r['outputs_changed']} output(s) changed")
    parts += [f"call {x['call']} refused: {x['reason']}" for x in r["refused"]]
    named = r.get("reward_changed") or r["call_rewards_changed"] or "finished_at" in r
    if r["changed"] and not (named or r["refused"] or (outputs and r["outputs_changed"])):
        parts.append("no replay reproduced the recording")  # each kind by another replay
    return "; ".join(parts) or None


def _side(call: Call | None) -> dict[str, Any] | None:
    if call is None:
        return None
    side = {k: call.get(k) for k in ("reward", "finished", "error")}
    return {**side, "text": cut(str(call.get("text", "")), MAX_SHOWN), "images": call.get("images")}


def side_by_side(recorded: Sequence[Call], replayed: Sequence[Call]) -> list[dict[str, Any]]:
    """The rollout as ``orsgen view`` shows it: each call, then its recorded and replayed
    results (``sides``; ``None`` for a call one of them did not make)."""
    messages: list[dict[str, Any]] = []
    for i, (a, b) in enumerate(itertools.zip_longest(recorded, replayed)):
        call: Call = a if a is not None else b
        arguments = json.dumps(call.get("arguments"), sort_keys=True, default=str)
        function = {"name": call.get("tool"), "arguments": arguments}
        tool_call = {"id": f"call_{i}", "type": "function", "function": function}
        messages.append({"role": "assistant", "content": "", "tool_calls": [tool_call]})
        said = {"role": "tool", "tool_call_id": f"call_{i}", "name": call.get("tool")}
        content = cut(str(call.get("text", "")), MAX_SHOWN)
        messages.append({**said, "content": content, "sides": [_side(a), _side(b)]})
    return messages

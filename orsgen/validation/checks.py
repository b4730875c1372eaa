"""The checks: what the probes observed (:class:`orsgen.validation.plan.Observations`)
becomes findings and each check's status. Pure: no I/O. Each check's rule lives here once.

Statuses: ``failed`` with a finding of any severity, else ``passed``, or ``skipped`` with
the reason when nothing could be judged (one split for ``split_overlap``, one task for
``duplicate_tasks``, an interrupted run before the check's probes ran)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orsgen.jsonobject import as_object, is_object
from orsgen.runtime.records.passk import passes
from orsgen.validation.plan import Look, Observations, Session
from orsgen.validation.probe import Call
from orsgen.validation.result import CHECKS, CheckStatus, Finding, Severity, json_number


@dataclass(frozen=True)
class Rules:
    """The thresholds the checks judge by (``--pass-threshold``, ``--reward-range``)."""

    pass_threshold: float = 1.0
    reward_range: tuple[float, float] = (0.0, 1.0)


def normalized(prompt: str) -> str:
    """Prompt text as compared: case-folded, whitespace collapsed."""
    return " ".join(prompt.casefold().split())


def _calls_json(calls: Sequence[Call]) -> list[dict[str, Any]]:
    return [c.evidence() for c in calls]


def _finding(
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
        evidence = {"calls": _calls_json(session.calls[: i + 1]), "note": note}
        found[key] = _finding("trivial_reward", "error", session, call.tool, evidence)
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
            found[key] = _finding("reward_out_of_range", severity, session, call.tool, evidence)
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
            evidence: dict[str, Any] = {"calls": _calls_json(session.calls[: i + 1]), "note": note}
            found[key] = _finding("server_error", "error", session, call.tool, evidence)
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
                evidence = {"calls": _calls_json(session.calls[: i + 1]), "note": note}
                found[key] = _finding("finished_unscored", "warning", session, call.tool, evidence)
    return list(found.values())


def empty_prompt(obs: Observations) -> list[Finding]:
    return [
        _finding(
            "empty_prompt",
            "error",
            look,
            None,
            {"prompt": look.prompt, "note": "the prompt has no text and no image"},
        )
        for look in obs.looks.values()
        if not look.prompt.strip() and not look.image
    ]


def _tool_names(look: Look) -> list[str]:
    return sorted(str(t["name"]) for t in look.tools)


def _by_split(obs: Observations) -> dict[str, list[Look]]:
    out: dict[str, list[Look]] = {s: [] for s in obs.splits}
    for look in sorted(obs.looks.values(), key=lambda lk: (lk.split, lk.index)):
        out.setdefault(look.split, []).append(look)
    return out


def ignored_splits(obs: Observations) -> set[str]:
    """The splits of which every probed task (two or more) has the same prompt and tools."""
    out: set[str] = set()
    for split, looks in _by_split(obs).items():
        if len(looks) >= 2:
            first = looks[0]
            same = all(
                normalized(lk.prompt) == normalized(first.prompt)
                and _tool_names(lk) == _tool_names(first)
                for lk in looks
            )
            if same:
                out.add(split)
    return out


def task_index_ignored(obs: Observations) -> list[Finding]:
    found: list[Finding] = []
    looks = _by_split(obs)
    for split in sorted(ignored_splits(obs)):
        probed = looks[split]
        evidence = {
            "prompt": probed[0].prompt,
            "tools": _tool_names(probed[0]),
            "task_indices": [lk.index for lk in probed],
            "note": f"all {len(probed)} probed tasks of {split!r} have this prompt and these tools",
        }
        found.append(Finding("task_index_ignored", "error", split, probed[0].index, None, evidence))
    return found


def duplicate_tasks(obs: Observations) -> list[Finding]:
    """Two tasks of one split with the same prompt: one finding per later task, naming the
    first with its prompt. A split whose every task is the same is ``task_index_ignored``."""
    found: list[Finding] = []
    ignored = ignored_splits(obs)
    for split, looks in _by_split(obs).items():
        if split in ignored:
            continue
        first: dict[str, Look] = {}
        for look in looks:
            key = normalized(look.prompt)
            if not key:
                continue  # an empty prompt is empty_prompt's
            if key in first:
                evidence = {
                    "prompt": look.prompt,
                    "same_as": {"split": split, "task_index": first[key].index},
                }
                found.append(_finding("duplicate_tasks", "warning", look, None, evidence))
            else:
                first[key] = look
    return found


def _spec_key(spec: Any) -> str | None:
    if spec is None or (is_object(spec) and not spec):
        return None
    return json.dumps(spec, sort_keys=True, default=str)


def split_overlap(obs: Observations) -> list[Finding]:
    """A task whose normalized prompt, or task spec where the server lists specs, is also a
    task of another split: one finding per pair, naming the task of the later split (in the
    server's order) and, in its evidence, the other."""
    found: list[Finding] = []
    splits = list(obs.splits)
    looks = _by_split(obs)
    for split in ignored_splits(obs):  # its tasks are one task: compare that one once
        looks[split] = looks[split][:1]
    for a_at, a in enumerate(splits):
        for b in splits[a_at + 1 :]:
            for later in looks.get(b, []):
                for earlier in looks.get(a, []):
                    matched = _matched(obs, earlier, later)
                    if matched is None:
                        continue
                    evidence = {
                        "prompt": later.prompt,
                        "matched_on": matched,
                        "same_as": {"split": a, "task_index": earlier.index},
                    }
                    found.append(_finding("split_overlap", "error", later, None, evidence))
    return found


def _matched(obs: Observations, earlier: Look, later: Look) -> str | None:
    prompt = normalized(later.prompt)
    if prompt and prompt == normalized(earlier.prompt):
        return "prompt"
    specs_a, specs_b = obs.specs.get(earlier.split), obs.specs.get(later.split)
    if specs_a is None or specs_b is None:
        return None
    if earlier.index >= len(specs_a) or later.index >= len(specs_b):
        return None
    key = _spec_key(specs_b[later.index])
    if key is not None and key == _spec_key(specs_a[earlier.index]):
        return "task_spec"
    return None


def _position_differs(runs: Sequence[Session], at: int) -> tuple[bool, bool]:
    """Whether the runs differ at call ``at`` (reward, output); a run that ended earlier
    differs in its reward."""
    calls = [r.calls[at] if at < len(r.calls) else None for r in runs]
    first = calls[0]
    reward = output = False
    for other in calls[1:]:
        if first is None or other is None:
            if (first is None) != (other is None):
                reward = True
            continue
        same_reward, same_output = first.same(other)
        reward |= not same_reward
        output |= not same_output
    return reward, output


def nondeterministic(obs: Observations) -> list[Finding]:
    """The fresh runs ``F1``..``F3`` of a task (the same calls, fresh sessions) compared call
    by call: a different reward is an error, a different output a warning, each naming the
    first call (its tool) where they differ."""
    found: list[Finding] = []
    for split, index in sorted(obs.deep):
        runs = obs.fresh(split, index)
        if len(runs) < 2:
            continue
        rewards: list[int] = []
        outputs: list[int] = []
        for at in range(max(len(r.calls) for r in runs)):
            reward, output = _position_differs(runs, at)
            rewards += [at] if reward else []
            outputs += [at] if output else []
        if not rewards and not outputs:
            continue
        severity: Severity = "error" if rewards else "warning"
        at = (rewards or outputs)[0]
        tool = next(r.calls[at].tool for r in runs if at < len(r.calls))
        what = "reward" if rewards else "output"
        evidence = {
            "runs": [_calls_json(r.calls) for r in runs],
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
        runs, beside = obs.fresh(split, index), obs.beside(split, index)
        if len(runs) < 2 or beside is None:
            continue
        other = next(
            (
                s
                for s in obs.sessions
                if s.purpose == "other" and (s.split, s.index) == (split, index)
            ),
            None,
        )
        if any(any(_position_differs(runs, at)) for at in range(max(len(r.calls) for r in runs))):
            continue  # not deterministic: nothing to compare a leak with
        for at, call in enumerate(beside.calls):
            if at >= len(runs[0].calls):
                break
            fresh = runs[0].calls[at]
            if all(call.same(fresh)):
                continue
            evidence = {
                "fresh": _calls_json(runs[0].calls[: at + 1]),
                "other_session": _calls_json(other.calls if other is not None else []),
                "beside": _calls_json(beside.calls[: at + 1]),
                "note": f"call {at + 1} ({call.tool}) gave another result in a session open "
                "while another session of the task made other calls than in fresh sessions",
            }
            found.append(Finding("session_state_leak", "error", split, index, call.tool, evidence))
            break
    return found


def _described(schema: Any, node: Any) -> bool:
    """Whether a parameter's schema has a description (on it, or on what its ``$ref`` names)."""
    prop = as_object(node)
    if str(prop.get("description") or "").strip():
        return True
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = schema
        for part in ref[2:].split("/"):
            target = as_object(target).get(part)
        return bool(str(as_object(target).get("description") or "").strip())
    return False


def undocumented(obs: Observations) -> list[Finding]:
    """A tool with no description or with parameters without one: one finding per tool
    (shared tools and task tools alike), naming the parameters."""
    tools: dict[str, dict[str, Any]] = {}
    for look in sorted(obs.looks.values(), key=lambda lk: (lk.split, lk.index)):
        for tool in look.tools:
            tools.setdefault(str(tool["name"]), tool)
    found: list[Finding] = []
    for name in sorted(tools):
        tool = tools[name]
        schema = tool.get("input_schema")
        properties = as_object(as_object(schema).get("properties"))
        bare = [str(p) for p, node in properties.items() if not _described(schema, node)]
        no_description = not str(tool.get("description") or "").strip()
        if no_description or bare:
            evidence: dict[str, Any] = {
                "tool_description": None if no_description else tool.get("description"),
                "parameters_without_description": bare,
            }
            found.append(Finding("undocumented", "warning", None, None, name, evidence))
    return found


def judge(
    obs: Observations, rules: Rules, interrupted: bool
) -> tuple[dict[str, CheckStatus], list[Finding]]:
    """Every check's status and the findings, in :data:`CHECKS` order."""
    findings = {
        "trivial_reward": trivial_reward(obs, rules),
        "nondeterministic": nondeterministic(obs),
        "split_overlap": split_overlap(obs),
        "duplicate_tasks": duplicate_tasks(obs),
        "task_index_ignored": task_index_ignored(obs),
        "empty_prompt": empty_prompt(obs),
        "reward_out_of_range": reward_out_of_range(obs, rules),
        "server_error": server_error(obs),
        "session_state_leak": session_state_leak(obs),
        "undocumented": undocumented(obs),
        "finished_unscored": finished_unscored(obs),
    }
    reasons = _skip_reasons(obs, interrupted)
    statuses: dict[str, CheckStatus] = {}
    for name in CHECKS:
        if findings[name]:
            statuses[name] = CheckStatus("failed")
        elif name in reasons:
            statuses[name] = CheckStatus("skipped", reasons[name])
        else:
            statuses[name] = CheckStatus("passed")
    order = {split: at for at, split in enumerate(obs.splits)}

    def where(f: Finding) -> tuple[int, int, str]:
        split = -1 if f.split is None else order.get(f.split, len(order))
        return split, -1 if f.task_index is None else f.task_index, f.tool or ""

    return statuses, [f for name in CHECKS for f in sorted(findings[name], key=where)]


def _skip_reasons(obs: Observations, interrupted: bool) -> dict[str, str]:
    """Why a check without findings judged nothing."""
    if interrupted:  # a check without findings so far judged an unfinished probe
        total = sum(obs.splits.values())
        why = f"interrupted: {len(obs.done)} of {total} tasks probed"
        return {name: why for name in CHECKS}
    reasons: dict[str, str] = {}
    looks = _by_split(obs)
    tools = any(look.tools for look in obs.looks.values())
    calls = any(s.calls for s in obs.sessions)
    deep_done = any(len(obs.fresh(*key)) >= 2 for key in obs.deep)
    leak_done = any(obs.beside(*key) is not None for key in obs.deep)
    if not obs.looks:
        why = obs.gave_up or "no task could be probed"
        if not any(obs.splits.values()):
            why = "no task to probe"
        return {name: why for name in CHECKS}
    if len([s for s in obs.splits if looks.get(s)]) < 2:
        reasons["split_overlap"] = "only one split was probed"
    if all(len(v) < 2 for v in looks.values()):
        reasons["duplicate_tasks"] = "no split has two probed tasks"
        reasons["task_index_ignored"] = "no split has two probed tasks"
    if not tools:
        for name in (
            "trivial_reward",
            "nondeterministic",
            "session_state_leak",
            "undocumented",
            "server_error",
            "finished_unscored",
            "reward_out_of_range",
        ):
            reasons[name] = "the environment offers no tools"
        return reasons
    if not calls:
        for name in ("trivial_reward", "reward_out_of_range", "server_error", "finished_unscored"):
            reasons[name] = obs.gave_up or "no call was made"
    if not deep_done:
        reasons["nondeterministic"] = obs.gave_up or "the determinism probe could not run"
    if not leak_done:
        reasons["session_state_leak"] = obs.gave_up or "the session-leak probe could not run"
    return reasons

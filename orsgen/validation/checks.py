"""What the probes observed becomes findings and each check's status (pure). Each check's
rule lives once, in call_checks, task_checks or session_checks."""

from __future__ import annotations

from orsgen.validation.call_checks import Rules, finished_unscored, reward_out_of_range
from orsgen.validation.call_checks import server_error, trivial_reward
from orsgen.validation.plan import Observations
from orsgen.validation.result import CHECKS, CheckStatus, Finding
from orsgen.validation.session_checks import nondeterministic, session_state_leak
from orsgen.validation.task_checks import by_split, duplicate_tasks, empty_prompt
from orsgen.validation.task_checks import split_overlap, task_index_ignored, undocumented

__all__ = ["Rules", "judge"]


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
    looks = by_split(obs)
    tools = any(look.tools for look in obs.looks.values())
    calls = any(s.calls for s in obs.sessions)
    deep_done = any(len(obs.fresh(*key)) >= 2 for key in obs.deep)
    leak_done = any(obs.of("beside", *key) for key in obs.deep)
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
    if not tools:  # the checks of what tasks show alone can judge
        shown = ("split_overlap", "duplicate_tasks", "task_index_ignored", "empty_prompt")
        return reasons | {n: "the environment offers no tools" for n in CHECKS if n not in shown}
    if not calls:
        for name in ("trivial_reward", "reward_out_of_range", "server_error", "finished_unscored"):
            reasons[name] = obs.gave_up or "no call was made"
    if not deep_done:
        reasons["nondeterministic"] = obs.gave_up or "the determinism probe could not run"
    if not leak_done:
        reasons["session_state_leak"] = obs.gave_up or "the session-leak probe could not run"
    return reasons

"""Outcome-only rewards, read through the :class:`Rollout` protocol: nothing of the adapter
is imported here."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from orsgen.jsonobject import is_object, is_sequence
from orsgen.runtime.records.passk import PASS_THRESHOLD, grouped_pass_at_k
from orsgen.runtime.records import metrics, trainer_facts
from orsgen.runtime.records.protocol import HasRollout, Rollout
from orsgen.runtime.trajectories import task_table
from orsgen.runtime.upload import build as upload


def _rollout(env: object) -> Rollout | None:
    return env.rollout if isinstance(env, HasRollout) else None


def final_message(completion: Any) -> str | None:
    """The text of a rollout's final assistant message, or ``None`` when the rollout ended
    on a tool call (or has no assistant message): then there is no answer to submit."""
    if isinstance(completion, str):
        return completion
    if not is_sequence(completion):
        return None
    for message in reversed(completion):
        if not is_object(message) or message.get("role") != "assistant":
            continue
        if message.get("tool_calls"):
            return None
        content = message.get("content")
        if isinstance(content, str):
            return content
        if is_sequence(content):
            parts = [p.get("text", "") for p in content if is_object(p)]
            return "".join(str(p) for p in parts)
        return ""
    return None


def outcome_reward(
    environments: Sequence[Any],
    completions: Sequence[Any] | None = None,
    log_metric: Callable[[str, float], object] | None = None,
    log_extra: Callable[[str, list[Any]], object] | None = None,
    trainer_state: Any = None,
    task_index: Sequence[Any] | None = None,
    split: Sequence[Any] | None = None,
    prompts: Sequence[Any] | None = None,
    **_: Any,
) -> list[float | None]:
    """Each rollout's reward by docs/training.md's rules (the last non-null one, else
    ``unfinished_reward`` when the session worked and ``None`` when it failed). With TRL's
    ``log_metric`` the batch's ``ors/*`` metrics reach the trainer's log, with ``log_extra``
    each rollout's task index and split become completions-table columns, and every scored
    batch feeds the per-task table. Given ``completions``, a terminal tool first grades each
    rollout's final plain assistant message (once per rollout)."""
    rollouts = [_rollout(env) for env in environments]
    trainer_facts.note_step(trainer_state)  # the step the batch's trajectory lines carry
    if completions is not None:
        upload.note_transcripts(rollouts, prompts, completions)  # with upload_run= only
        jobs: list[tuple[Rollout, str]] = []
        for rollout, completion in zip(rollouts, completions):
            text = final_message(completion)
            if rollout is not None and rollout.takes_final_answer and text is not None:
                jobs.append((rollout, text))
        # Grading calls are independent sessions: run them side by side, not one by one.
        if jobs:
            with ThreadPoolExecutor(max_workers=min(32, len(jobs))) as pool:
                for future in [pool.submit(r.submit_final, text) for r, text in jobs]:
                    future.result()
    outcomes = [None if r is None else r.settle() for r in rollouts]
    rewards = [None if o is None else o.reward for o in outcomes]
    thresholds = [PASS_THRESHOLD if r is None else r.pass_threshold for r in rollouts]
    if log_metric is not None:
        settled = [(o, t) for o, t in zip(outcomes, thresholds) if o is not None]
        metrics.emit(log_metric, [o for o, _ in settled], [t for _, t in settled])
        if task_index is not None and len(task_index) == len(rewards):
            keys = list(zip(task_index, split or [None] * len(rewards)))
            for k, value in grouped_pass_at_k(keys, rewards, thresholds).items():
                if k > 1:  # pass@1, the share of rollouts that pass, is emit()'s
                    log_metric(f"ors/pass@{k}", value)
    tasks = [None if r is None else (r.split, r.task_index) for r in rollouts]
    task_table.record(tasks, outcomes, trainer_state, thresholds)
    if log_extra is not None:
        task_table.log_tasks(log_extra, tasks)
    return rewards


def group_reward(
    environments: Sequence[Any], completions: Sequence[Any] | None = None, **_: Any
) -> list[float | None]:
    """Comparative rewards from the environment's own group judge (ORS ``score_group``): a
    task's rollouts (a GRPO group) judged together on their final assistant messages. ``None``
    where the environment does not judge groups or judging failed; pass ``outcome_reward`` too
    to combine them."""
    out: list[float | None] = [None] * len(environments)
    if completions is None:
        return out
    groups: dict[Hashable, list[tuple[int, Rollout]]] = {}
    for i, env in enumerate(environments):
        rollout = _rollout(env)
        if rollout is not None and (key := rollout.group) is not None:
            groups.setdefault(key, []).append((i, rollout))
    for members in groups.values():
        answers = [final_message(completions[i]) or "" for i, _judged in members]
        scores = members[0][1].score_group(answers)
        for (i, _judged), score in zip(members, scores or []):
            out[i] = score
    return out

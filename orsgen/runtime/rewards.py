"""Outcome-only rewards computed from the adapters' rollout state."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from orsgen.jsonobject import is_object, is_sequence


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
    environments: Sequence[Any], completions: Sequence[Any] | None = None, **_: Any
) -> list[float | None]:
    """The last non-null reward of each rollout, or ``None`` when the rollout was never scored.

    ``None`` covers no call at all, only unscored calls and only failed calls, and a
    rollout whose session the server lost or that ran degraded (environment unavailable);
    otherwise a later unscored or failed call never erases an earlier score; ``0.0`` and negative rewards
    are real scores.

    An environment with a terminal tool grades the model's final plain message: when
    ``completions`` are given, each rollout's final assistant message is submitted
    through that tool first (once per rollout; never after the episode finished).
    """
    if completions is not None:
        jobs: list[tuple[Callable[[str], object], str]] = []
        for env, completion in zip(environments, completions):
            submit = getattr(env, "_submit_final", None)
            text = final_message(completion)
            if submit is not None and text is not None and getattr(env, "TERMINAL_TOOL", None):
                jobs.append((submit, text))
        # Grading calls are independent sessions: run them side by side, not one by one.
        if len(jobs) == 1:
            jobs[0][0](jobs[0][1])
        elif jobs:
            with ThreadPoolExecutor(max_workers=min(32, len(jobs))) as pool:
                for future in [pool.submit(fn, arg) for fn, arg in jobs]:
                    future.result()
    out: list[float | None] = []
    for env in environments:
        if getattr(env, "_void", False):  # its session was lost, or it ran degraded
            out.append(None)
            continue
        scored = [r for r in getattr(env, "rewards", []) if r is not None]
        out.append(float(scored[-1]) if scored else None)
    return out


def group_reward(
    environments: Sequence[Any], completions: Sequence[Any] | None = None, **_: Any
) -> list[float | None]:
    """Comparative rewards from the environment's own group judge (ORS ``score_group``).

    Rollouts of the same task (a GRPO group) are judged together, in one request on one
    of their sessions, from their final assistant messages. ``None`` for rollouts whose
    environment does not judge groups, or when judging failed; pointwise rewards stay in
    ``outcome_reward``. Pass both to combine them.
    """
    out: list[float | None] = [None] * len(environments)
    if completions is None:
        return out
    groups: dict[Any, list[int]] = {}
    for i, env in enumerate(environments):
        key = (
            getattr(env, "_group_key", None)
            if getattr(env, "SUPPORTS_SCORE_GROUP", False)
            else None
        )
        if key is not None:
            groups.setdefault(key, []).append(i)
    for members in groups.values():
        answers = [final_message(completions[i]) or "" for i in members]
        scores = environments[members[0]]._score_group(answers)
        if scores is not None:
            for i, score in zip(members, scores):
                out[i] = score
    return out

"""Environments that judge groups (ORS ``score_group``), evaluated as trained: the samples
of one task are one group, judged together on their final answers once the last of them
finishes, on that rollout's still-open session (``rollout.score_group``, the runtime's own
path, as ``group_reward`` does in training).

A group's rows are written together, once judged, so a run stopped halfway reruns the
whole group. Each row keeps its pointwise outcome and gets ``group_reward``; a row that the
environment did not score itself, and whose group score exists, takes that score as its
``reward`` and becomes ``scored``. When the judge gives no scores, each row of the group
says why in its ``reason``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from orsgen.runtime.errors import describe


class Groups:
    """The rows of the groups still running, per task (``expected``: how many rollouts
    of each task this run makes)."""

    def __init__(self, expected: Mapping[int, int]) -> None:
        self._expected = dict(expected)
        self._parked: dict[int, list[tuple[dict[str, Any], str]]] = {}
        self._lock = threading.Lock()

    def add(
        self, env: Any, task_index: int, row: dict[str, Any], answer: str | None
    ) -> list[dict[str, Any]]:
        """Park ``row``; when it completes its task's group, the group's judged rows."""
        with self._lock:
            parked = self._parked.setdefault(task_index, [])
            parked.append((row, answer or ""))
            if len(parked) < self._expected.get(task_index, 1):
                return []
            del self._parked[task_index]
        scores, why = _judge(env, [answer for _, answer in parked])
        out: list[dict[str, Any]] = []
        for i, (judged, _) in enumerate(parked):
            score = scores[i] if scores is not None else None
            judged["group_reward"] = score
            if score is not None and judged["verdict"] == "unfinished":
                judged.update(reward=score, verdict="scored", reason=None)
            elif why is not None:
                judged["reason"] = why if not judged["reason"] else f"{judged['reason']}; {why}"
            out.append(judged)
        return sorted(out, key=lambda r: int(r["sample"]))


def _judge(env: Any, answers: list[str]) -> tuple[list[float] | None, str | None]:
    """The group's scores, or ``None`` and why there are none."""
    if env is None:
        return None, "group judge: the rollout had no adapter"
    try:
        scores = env.rollout.score_group(answers)
    except Exception as exc:  # noqa: BLE001 - no group score is a row that says why
        return None, f"group judge: {describe(exc)}"
    if scores is None:
        why = getattr(env.rollout, "group_error", None) or "no session to judge on"
        return None, f"group judge: {why}"
    return scores, None

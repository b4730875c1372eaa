"""Environments that judge groups (ORS ``score_group``), evaluated as trained: the samples
of one task are one group, judged together on their final answers once the last of them
finishes, on that rollout's still-open session (``rollout.score_group``, the runtime's own
path, as ``group_reward`` does in training).

A group's rows are written together, once judged, so a run stopped halfway reruns the
whole group. Each row keeps its pointwise outcome and gets ``group_reward``; a row that the
environment did not score itself, and whose group score exists, takes that score as its
``reward`` and becomes ``scored``.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any


class Groups:
    """The rows of the groups still running, per task."""

    def __init__(self, todo: list[tuple[int, int]]) -> None:
        self._expected = Counter(task for task, _ in todo)
        self._parked: dict[int, list[tuple[dict[str, Any], str]]] = {}
        self._lock = threading.Lock()

    def add(
        self, env: Any, task_index: int, row: dict[str, Any], answer: str | None
    ) -> list[dict[str, Any]]:
        """Park ``row``; when it completes its task's group, the group's judged rows."""
        with self._lock:
            parked = self._parked.setdefault(task_index, [])
            parked.append((row, answer or ""))
            if len(parked) < self._expected[task_index]:
                return []
            del self._parked[task_index]
        scores = None
        if env is not None:
            try:
                scores = env.rollout.score_group([answer for _, answer in parked])
            except Exception:  # noqa: BLE001 - no group score is a row without one
                scores = None
        out: list[dict[str, Any]] = []
        for i, (judged, _) in enumerate(parked):
            score = scores[i] if scores is not None else None
            judged["group_reward"] = score
            if score is not None and judged["verdict"] == "unfinished":
                judged.update(reward=score, verdict="scored", reason=None)
            out.append(judged)
        return sorted(out, key=lambda r: int(r["sample"]))

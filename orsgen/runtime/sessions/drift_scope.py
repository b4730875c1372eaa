"""Which task a drift finding belongs to (docs/scale.md, "Drift guard"): one about a shared
tool holds for every task on that server, one about a task tool for the task it was measured on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orsgen.jsonobject import as_array, as_object

TaskKey = tuple[str, int | None]  # (split, task index); None: a task_spec session


@dataclass(frozen=True)
class Finding:
    """One difference from the snapshot; ``shared``: about a shared tool (every task)."""

    text: str
    shared: bool


def probed_tasks(snapshot_env: Mapping[str, Any] | None) -> frozenset[TaskKey]:
    """The tasks the snapshot's task-tool probe opened a session on."""
    probe = as_object((snapshot_env or {}).get("task_tools_probe"))
    split = probe.get("split")
    if not probe.get("enabled") or not isinstance(split, str):
        return frozenset()
    return frozenset((split, int(i)) for i in as_array(probe.get("indices")))


def expected_task_tools(
    snapshot_env: Mapping[str, Any], split: str, index: int | None
) -> set[str] | None:
    """The snapshot's task tools this task offered when probed; ``None`` when the snapshot
    cannot say (the task was not probed, or an older snapshot did not record it)."""
    if (split, index) not in probed_tasks(snapshot_env):
        return None
    probe = as_object(snapshot_env.get("task_tools_probe"))
    names = {str(t["name"]) for t in as_array(snapshot_env.get("task_tools"))}
    by_task = probe.get("tools_by_task")
    if by_task is not None:
        return {str(n) for n in as_array(as_object(by_task).get(str(index)))} & names
    if len(as_array(probe.get("indices"))) == 1:
        return names  # the one probed task offered every task tool the snapshot holds
    return None


@dataclass
class Verdict:
    """One server's findings: about shared tools, and about task tools by task."""

    shared: list[str] = field(default_factory=list[str])
    by_task: dict[TaskKey, list[str]] = field(default_factory=dict[TaskKey, list[str]])

    def add(self, task: TaskKey, findings: list[Finding]) -> None:
        for finding in findings:
            if finding.shared:
                if finding.text not in self.shared:
                    self.shared.append(finding.text)
            else:
                self.by_task.setdefault(task, []).append(finding.text)

    def on(self, task: TaskKey) -> list[str]:
        """The findings that hold for a session on ``task``."""
        return [*self.shared, *self.by_task.get(task, [])]

"""What a validation found, typed: the checks (:data:`CHECKS`), each :class:`Finding`,
each check's :class:`CheckStatus`, and the :class:`ValidationResult` that holds them and
is written as ``validation.json``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from orsgen._version import __version__

Severity = Literal["error", "warning"]
Status = Literal["failed", "passed", "skipped"]

# Every check, in report order, with what it finds (issue 46's table; docs/validating.md).
CHECKS: dict[str, str] = {
    "trivial_reward": "a degenerate action earns at least the pass threshold on a task",
    "nondeterministic": "the same calls on the same task, in fresh sessions, give a "
    "different reward (error) or output (warning)",
    "split_overlap": "a task whose prompt (or task spec) appears in two splits",
    "duplicate_tasks": "two tasks of one split with the same prompt",
    "task_index_ignored": "every probed task of a split has the same prompt and task tools",
    "empty_prompt": "a task whose prompt has no text and no image",
    "reward_out_of_range": "a reward that is NaN or infinite (error), or outside "
    "--reward-range (warning)",
    "server_error": "a schema-valid call answered by a server failure (HTTP 5xx, a dropped "
    "stream, an SSE error event) instead of a result or a tool error",
    "session_state_leak": "calls in one session change the results of the same calls in "
    "another session of the same task open at the same time",
    "undocumented": "a tool or a parameter with no description",
    "finished_unscored": "a call returns finished with no reward",
}


def json_number(value: float | None) -> float | str | None:
    """A reward as validation.json holds it: NaN and infinities as the strings ``"NaN"``,
    ``"Infinity"`` and ``"-Infinity"`` (strict JSON has no literal for them)."""
    if value is None or math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


@dataclass(frozen=True)
class Finding:
    """One defect: its check, severity, where (split, task index, tool; ``None`` where one
    does not apply) and the evidence that shows it (the calls made and what they returned)."""

    check: str
    severity: Severity
    split: str | None
    task_index: int | None
    tool: str | None
    evidence: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "evidence": dict(self.evidence)}

    def where(self) -> str:
        """``train/3 tool echo``: the task and tool, for one-line reports."""
        parts: list[str] = []
        if self.split is not None:
            parts.append(
                f"{self.split}/{self.task_index}" if self.task_index is not None else self.split
            )
        if self.tool is not None:
            parts.append(f"tool {self.tool}")
        return " ".join(parts) or "environment"

    def reaches(self, level: Severity) -> bool:
        """Whether this finding is at ``level`` or above (an error reaches ``warning``)."""
        return self.severity == "error" or level == "warning"


@dataclass(frozen=True)
class CheckStatus:
    """A check's verdict: ``failed`` (a finding of any severity), ``passed`` or
    ``skipped`` (``reason`` says why)."""

    status: Status
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ValidationResult:
    """What ``orsgen validate`` found: every check's status, the findings, the latencies
    and the facts of the run (target, environment, options; never a key or a secret).
    ``interrupted``: the run was stopped (Ctrl-C) and holds what was found until then."""

    target: str
    environment: str | None
    options: Mapping[str, Any]
    checks: Mapping[str, CheckStatus]
    findings: Sequence[Finding]
    latency: Mapping[str, Any] = field(default_factory=dict[str, Any])
    interrupted: bool = False
    seconds: float = 0.0
    out: str | None = None

    def failed(self, level: Severity = "error") -> bool:
        """Whether a finding reaches ``level`` (``--fail-on``): exit code 1."""
        return any(f.reaches(level) for f in self.findings)

    def counts(self) -> dict[str, int]:
        return {s: sum(f.severity == s for f in self.findings) for s in ("error", "warning")}

    def to_json(self) -> dict[str, Any]:
        """The validation.json object."""
        return {
            "target": self.target,
            "environment": self.environment,
            "orsgen_version": __version__,
            "options": dict(self.options),
            "interrupted": self.interrupted,
            "seconds": round(self.seconds, 3),
            "checks": {name: status.to_json() for name, status in self.checks.items()},
            "findings": [f.to_json() for f in self.findings],
            "latency": dict(self.latency),
        }

"""What ``orsgen view`` reads (any run :func:`~orsgen.runlog.open_run` opens) as one
:class:`Run`, each rollout judged with the pass threshold its run (a trajectory line: its
adapter) recorded. Keys named like a secret are dropped at any depth (:func:`scrub`), so a
viewer file never carries one even when a hand-written row does.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orsgen.jsonobject import is_array, is_object
from orsgen.runlog import Rollout, open_run
from orsgen.runtime.records.passk import PASS_THRESHOLD, passes
from orsgen.runtime.records.tools import ToolTally, failed_by

# Keys never copied into a viewer file, at any depth (compared lower-cased).
HIDDEN_KEYS = frozenset(
    {"secrets", "secret", "env_overrides", "api_key", "apikey", "x-api-key", "authorization"}
)


@dataclass
class Run:
    """One run as the page shows it. ``kind`` is ``"eval"`` or ``"training"``."""

    kind: str
    title: str
    facts: dict[str, Any] = field(default_factory=lambda: {})
    records: list[dict[str, Any]] = field(default_factory=lambda: [])


def scrub(value: Any) -> Any:
    if is_object(value):
        return {k: scrub(v) for k, v in value.items() if str(k).lower() not in HIDDEN_KEYS}
    if is_array(value):
        return [scrub(v) for v in value]
    return value


def load(run: str | os.PathLike[str]) -> Run:
    opened = open_run(run)
    if opened.spec.kind == "trajectory":
        return _training_run(opened.files, opened.path.name)
    facts: dict[str, Any] = {**opened.spec.raw, **(opened.summary or {})}  # none: still going
    for key in ("per_task", "rules", "task_indices"):
        facts.pop(key, None)
    threshold = facts.setdefault("pass_threshold", PASS_THRESHOLD)
    tools, records = ToolTally(), list[dict[str, Any]]()
    for row in opened.rows():
        tools.add(row.tool_calls)
        records.append(_eval_record(row, float(threshold)))
    facts["tools"] = tools.figures()  # also of a run still going, which has no summary
    title = f"{facts.get('model', '?')} on {facts.get('environment', '?')} ({opened.spec.split})"
    return Run("eval", title, scrub(facts), records)


def _record(
    row: Rollout, threshold: float, timings: Mapping[str, float | None], **rest: Any
) -> dict[str, Any]:
    """What an evaluation row's and a trajectory line's records both hold."""
    record: dict[str, Any] = scrub(
        {
            "task": row.task_index,
            "split": row.split,
            "verdict": row.verdict,
            "reward": row.reward,
            "passed": passes(row.reward, threshold),
            "timings": {k: v for k, v in timings.items() if v is not None},
            "reason": row.reason,
            "stop": row.stop,
            **rest,
        }
    )
    return record


def _eval_record(row: Rollout, threshold: float) -> dict[str, Any]:
    timings = {k: getattr(row, k) for k in ("seconds", "endpoint_seconds", "environment_seconds")}
    counts = {k: v for k, v in (("calls", row.calls), ("turns", row.turns)) if v is not None}
    usage = row.usage
    tokens = {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}
    return _record(
        row,
        threshold,
        timings,
        sample=row.sample,
        step=None,
        counts=counts,
        usage=tokens if usage.recorded else {},
        messages=row.messages,
    )


def _training_run(files: tuple[Path, ...], name: str) -> Run:
    records: list[dict[str, Any]] = []
    envs: set[str] = set()
    thresholds: set[float] = set()
    tools = ToolTally()  # by the environment's tool names (a trajectory line's)
    for file in files:
        for line in open_run(file).rows():
            envs.add(line.environment)
            threshold = PASS_THRESHOLD if line.pass_threshold is None else line.pass_threshold
            thresholds.add(threshold)
            records.append(_training_record(line, file.name, threshold))
            tools.add([[c.tool, failed_by(c.error), c.seconds or 0.0] for c in line.env_calls])
    # Samples number the rollouts of one (step, task) in the order they started.
    records.sort(key=lambda r: (_order(r["step"]), _order(r["task"]), r["started_at"] or 0.0))
    for _, rollouts in itertools.groupby(records, key=lambda r: (r["step"], r["task"])):
        for sample, record in enumerate(rollouts):
            record["sample"] = sample
    facts: dict[str, Any] = {"files": [f.name for f in files]}
    facts["environment"] = ", ".join(sorted(envs))
    facts["tools"] = tools.figures()
    # The threshold every line holds, or the ones they hold.
    facts["pass_threshold"] = sorted(thresholds)[0] if len(thresholds) == 1 else sorted(thresholds)
    return Run("training", f"training rollouts: {name}", scrub(facts), records)


def _order(value: Any) -> tuple[int, Any]:
    return (1, 0) if value is None else (0, value)


def _training_record(line: Rollout, file: str, threshold: float) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for number, call in enumerate(line.env_calls):
        call_id = f"call_{number}"
        function = {"name": call.tool, "arguments": json.dumps(call.arguments, sort_keys=True)}
        tool_call = {"id": call_id, "type": "function", "function": function}
        messages.append({"role": "assistant", "content": "", "tool_calls": [tool_call]})
        result = {"role": "tool", "tool_call_id": call_id, "name": call.tool, "content": call.text}
        extra = dict(
            finished=call.finished, reward=call.reward, error=call.error, seconds=call.seconds
        )
        messages.append({**result, **{k: v for k, v in extra.items() if v is not None}})
    return _record(
        line,
        threshold,
        {"reset_s": line.reset_s, "duration_s": line.seconds},
        step=line.step,
        env=line.environment,
        file=file,
        counts={"calls": len(messages) // 2},
        started_at=line.started_at,
        task_chosen=line.task_chosen,
        messages=messages,
    )

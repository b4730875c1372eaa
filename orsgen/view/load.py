"""What ``orsgen view`` reads (a run directory or trajectory JSONL) as one :class:`Run`, each
rollout judged by :func:`~orsgen.runtime.records.passk.passes` with the threshold its run recorded.

Records hold only what the files hold, minus anything that looks like a credential: keys
named like a secret (``secrets``, ``env_overrides``, ``api_key``, ...) are dropped wherever
they appear, so a viewer file never carries one even when a hand-written row does.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orsgen.jsonobject import as_array, as_object, is_array, is_object
from orsgen.runtime.records.passk import PASS_THRESHOLD, passes
from orsgen.runtime.records.tools import ToolTally, failed_by
from orsgen.runtime.trajectories.reader import pass_threshold
from orsgen.rundir import (
    RESULTS_FILE,
    SUMMARY_FILE,
    VERDICTS,
    RunDirError,
    read_config,
    read_summary,
    rows,
    run_rows,
)

# Keys never copied into a viewer file, at any depth (compared lower-cased).
HIDDEN_KEYS = frozenset(
    {"secrets", "secret", "env_overrides", "api_key", "apikey", "x-api-key", "authorization"}
)


class ViewError(Exception):
    """RUN cannot be read as a run (one line, exit code 2)."""


@dataclass
class Run:
    """One run as the page shows it. ``kind`` is ``"eval"`` or ``"training"``."""

    kind: str
    title: str
    facts: dict[str, Any] = field(default_factory=lambda: {})
    records: list[dict[str, Any]] = field(default_factory=lambda: [])


def _scrubbed(value: Mapping[str, Any]) -> dict[str, Any]:
    return {k: scrub(v) for k, v in value.items() if str(k).lower() not in HIDDEN_KEYS}


def scrub(value: Any) -> Any:
    """``value`` without any key named like a credential (see :data:`HIDDEN_KEYS`)."""
    if is_object(value):
        return {k: scrub(v) for k, v in value.items() if str(k).lower() not in HIDDEN_KEYS}
    if is_array(value):
        return [scrub(v) for v in value]
    return value


def load(run: str | os.PathLike[str]) -> Run:
    """The run at ``run``: an evaluation directory, or a trajectory file or directory of them."""
    path = Path(run)
    if not path.exists():
        raise ViewError(
            f"{path} does not exist; give an evaluation run directory or a trajectory file"
        )
    try:
        if path.is_dir() and (path / RESULTS_FILE).is_file():
            return _eval_run(path)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix == ".jsonl" and p.is_file())
            if not files:
                raise ViewError(
                    f"{path} holds neither {RESULTS_FILE} nor trajectory files (*.jsonl)"
                )
            return _training_run(files, path.name)
        return _training_run([path], path.name)
    except RunDirError as exc:
        raise ViewError(str(exc)) from None


def _eval_run(path: Path) -> Run:
    config = read_config(path)  # a run still going has no summary yet
    summary = read_summary(path) if (path / SUMMARY_FILE).is_file() else {}
    facts = {k: v for k, v in {**config, **summary}.items() if k not in ("per_task", "rules")}
    facts.pop("task_indices", None)
    threshold = facts.setdefault("pass_threshold", PASS_THRESHOLD)
    tools, records = ToolTally(), list[dict[str, Any]]()
    for _, row in run_rows(path / RESULTS_FILE):
        tools.add(row.get("tool_calls"))
        records.append(_eval_record(row, threshold))
    facts["tools"] = tools.figures()  # also of a run still going, which has no summary
    title = (
        f"{facts.get('model', '?')} on {facts.get('environment', '?')} ({facts.get('split', '?')})"
    )
    return Run("eval", title, _scrubbed(facts), records)


def _record(
    row: Mapping[str, Any], verdict: Any, threshold: float, timings: tuple[str, ...], **rest: Any
) -> dict[str, Any]:
    """A rollout's record: what an evaluation row and a trajectory line both hold."""
    reward = _number(row.get("reward"))
    return _scrubbed(
        {
            "task": row.get("task_index"),
            "split": row.get("split"),
            "verdict": verdict if verdict in VERDICTS else "failed",
            "reward": reward,
            "passed": passes(reward, threshold),
            "timings": {k: row[k] for k in timings if isinstance(row.get(k), (int, float))},
            **rest,
        }
    )


def _eval_record(row: Mapping[str, Any], threshold: float) -> dict[str, Any]:
    return _record(
        row,
        row.get("verdict"),
        threshold,
        ("seconds", "endpoint_seconds", "environment_seconds"),
        sample=row.get("sample", 0),
        step=None,
        reason=row.get("reason"),
        counts={k: row[k] for k in ("calls", "turns") if isinstance(row.get(k), int)},
        stop=row.get("stop"),
        usage=as_object(row.get("usage")),
        messages=as_array(row.get("messages")),
    )


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok else None


def _training_run(files: list[Path], name: str) -> Run:
    records: list[dict[str, Any]] = []
    envs: set[str] = set()
    thresholds: set[float] = set()
    tools = ToolTally()  # by the environment's tool names (a trajectory line's)
    for file in files:
        for line in rows(file):
            if "outcome" not in line and "calls" not in line:
                continue  # not a trajectory line
            envs.add(str(line.get("env", "?")))
            threshold = pass_threshold(line)  # its adapter's
            thresholds.add(threshold)
            records.append(_training_record(line, file.name, threshold))
            calls = [as_object(c) for c in as_array(line.get("calls"))]
            tools.add(
                [[c.get("tool"), failed_by(c.get("error")), c.get("seconds") or 0.0] for c in calls]
            )
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
    return Run("training", f"training rollouts: {name}", _scrubbed(facts), records)


def _order(value: Any) -> tuple[int, Any]:
    return (1, 0) if value is None else (0, value)


def _training_record(line: Mapping[str, Any], file: str, threshold: float) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for number, call in enumerate(as_array(line.get("calls"))):
        call = as_object(call)
        call_id = f"call_{number}"
        arguments = call.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, sort_keys=True)
        function = {"name": call.get("tool"), "arguments": text}
        tool_call = {"id": call_id, "type": "function", "function": function}
        messages.append({"role": "assistant", "content": "", "tool_calls": [tool_call]})
        result: dict[str, Any] = {
            "role": "tool",
            "tool_call_id": call_id,
            "name": call.get("tool"),
            "content": call.get("output", ""),
        }
        for key in ("reward", "finished", "error", "seconds"):
            if call.get(key) is not None:
                result[key] = call[key]
        messages.append(result)
    return _record(
        line,
        line.get("outcome"),
        threshold,
        ("reset_s", "duration_s"),
        step=line.get("step") if isinstance(line.get("step"), int) else None,
        env=line.get("env"),
        file=file,
        reason=line.get("why_unscored"),
        counts={"calls": len(messages) // 2},
        started_at=_number(line.get("started_at")),
        task_chosen=bool(line.get("task_chosen")),
        messages=messages,
    )

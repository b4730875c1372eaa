"""The environment an evaluation run recorded (``orsgen serve RUN``; docs/replay.md): the
splits and tools of the snapshot of the package the run evaluated, each task's prompt as
prompts.jsonl holds it (for a run made before that file, as its rows hold it, cut), and per
session its task's recorded rollouts: a call that continues one gets its recorded result,
any other is a tool error the episode goes on after. Images are served as their text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orsgen.jsonobject import as_array, as_object
from orsgen.runlog.open import Run, open_run
from orsgen.runlog.record import EnvCall, RunError
from orsgen.runtime.errors import OFF_RECORDING_TEXT
from orsgen.runtime.sessions.drift_scope import expected_task_tools
from orsgen.rundir import PROMPTS_FILE, RESULTS_FILE, read_json, rows
from orsgen.canonical import tools_sha256

MAX_CALL_TEXT = 300  # characters of a call named in a "not in the recording" error


@dataclass
class Task:
    prompt: str | None = None
    rollouts: list[list[EnvCall]] = field(default_factory=list)


@dataclass(frozen=True)
class Recording:
    """The snapshot's ``environment`` section, the run's split and its tasks."""

    environment: Mapping[str, Any]
    split: str
    tasks: dict[int, Task]

    def splits(self) -> dict[str, tuple[Any, int]]:
        """Each split's type and task count: the snapshot's, the recorded tasks included."""
        out = {self.split: ("validation", 0)}
        for s in as_array(self.environment.get("splits")):
            out[str(s.get("name"))] = (str(s.get("type")), int(s.get("num_tasks") or 0))
        kind, count = out[self.split]
        out[self.split] = kind, max(count, max(self.tasks, default=-1) + 1)
        return out

    def task(self, split: str, index: int) -> Task:
        return self.tasks.get(index, Task()) if split == self.split else Task()

    def prompt(self, split: str, index: int) -> str:
        said = self.task(split, index).prompt
        return f"not in the recording: task {index} of split {split!r}" if said is None else said

    def task_tools(self, split: str, index: int) -> list[Mapping[str, Any]]:
        """The task tools the snapshot's probe saw on a task, and those its rollouts called."""
        env = self.environment
        names = expected_task_tools(env, split, index) or set()
        task = self.task(split, index)
        names.update(call.tool for rollout in task.rollouts for call in rollout)
        return [t for t in as_array(env.get("task_tools")) if t.get("name") in names]


def load(run: Path, package: Path | None) -> Recording:
    """The recording in run directory ``run``, its tools from ``package`` (else the one it names)."""
    opened = open_run(run)
    if opened.spec.kind == "trajectory":
        raise RunError(
            f"{run} holds training trajectories, whose results are kept by hash and a preview: "
            "serve an `orsgen eval` run"
        )
    where = package or opened.package
    if where is None:
        raise RunError(
            f"{run}/run.json names no package; pass --package DIR, the package it evaluated"
        )
    snapshot = where / "snapshot.json"
    if not snapshot.is_file():
        moved = "" if package else "; it has moved: pass its directory with --package"
        raise RunError(f"{where} is not a generated package (no snapshot.json){moved}")
    environment = as_object(read_json(snapshot).get("environment"))  # raises RunError
    whole = {int(r["task_index"]): _text(r.get("prompt")) for r in rows(run / PROMPTS_FILE)}
    if opened.spec.raw.get("tools_sha256") not in (None, tools_sha256(environment)):
        raise RunError(
            f"{where} is not the package {run} evaluated: its tools differ; pass that one "
            "with --package DIR"
        )
    return Recording(environment, opened.spec.split, _tasks(opened, whole))


def _tasks(run: Run, whole: Mapping[int, str]) -> dict[int, Task]:
    """Each task's prompt (``whole``: prompts.jsonl's, else its first row's) and rollouts."""
    tasks: dict[int, Task] = {}
    count = unrecorded = 0
    for row in run.rows():
        count += 1
        if not row.recorded_calls:
            unrecorded += 1
            continue
        task = tasks.setdefault(row.task_index, Task())
        task.rollouts.append(row.env_calls)
        first = next(iter(row.messages), None)
        if task.prompt is None:
            task.prompt = whole.get(row.task_index)
        if task.prompt is None and first is not None and first.get("role") == "user":
            task.prompt = _text(first.get("content"))
    if not count:
        raise RunError(f"{run.path} holds no rollout to serve (no rows in {RESULTS_FILE})")
    if unrecorded:
        raise RunError(
            f"{run.path}: {unrecorded} of {count} rows record no tool calls and results "
            "(no env_calls; an older orsgen evaluated them); evaluate again to record them"
        )
    return tasks


def _text(content: object) -> str:
    """A message's text: a string as it is, a content list's text parts joined (a part as
    results.jsonl keeps it is its text, an image named ``(image)``)."""
    if isinstance(content, str):
        return content
    parts = [p if isinstance(p, str) else as_object(p).get("text") for p in as_array(content)]
    return "\n".join(p for p in parts if isinstance(p, str) and p != "(image)")


def _shown(tool: str, arguments: Mapping[str, Any]) -> str:
    text = f"{tool}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
    return text if len(text) <= MAX_CALL_TEXT else text[: MAX_CALL_TEXT - 3] + "..."


class Follower:
    """One session's place in its task's recorded rollouts."""

    def __init__(self, recording: Recording, split: str, index: int) -> None:
        self.index = index
        self.made = 0  # calls on the recording so far
        self.rollouts = list(recording.task(split, index).rollouts)

    def next(self, tool: str, arguments: Mapping[str, Any]) -> EnvCall | str:
        """The recorded result of this call, or why there is none (the error's text)."""
        at = self.made
        same = (tool, arguments)
        going = [r for r in self.rollouts if len(r) > at and (r[at].tool, r[at].arguments) == same]
        if going:
            self.rollouts, self.made = going, at + 1
            return going[0][at]
        said = (
            f"{OFF_RECORDING_TEXT}{_shown(tool, arguments)} at call {at + 1} of task {self.index}"
        )
        recorded = {_shown(r[at].tool, r[at].arguments): None for r in self.rollouts if len(r) > at}
        if recorded:
            said += f" (recorded there: {'; '.join(list(recorded)[:3])})"
        return said

"""A curriculum's prior (``PassRateCurriculum(prior=...)``): each task's pass rate as an
evaluation measured it, so the first pass need not visit every task.

A prior is read from (:func:`load`):

- an ``orsgen eval`` run directory, or several (their counts add up): ``summary.json``'s
  ``per_task`` (``task_index``, ``passed``, ``scored``, ``samples``) and ``run.json``'s
  identity (``environment``, ``split``, ``tools_sha256``, ``pass_threshold``);
- a :class:`~orsgen.rundir.FinishedRun` (``orsgen.eval.EvalResult``): the same;
- a training trajectory file or directory (``trajectories=``): each scored rollout, passed by
  the threshold its line records; a line records its ``split`` and ``pass_threshold`` but no
  environment name or tool hash, so only those two are checked;
- a mapping from task index to pass rate in [0, 1], which carries no identity.

A task's rate is its passing samples over its scored ones (none: not covered). A prior with
an identity is refused against another environment, split, tool hash or pass threshold
(:meth:`Prior.check`), naming the field. The runtime never imports ``orsgen.eval``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from orsgen.rundir import FinishedRun, RunError
from orsgen.runlog import Run, open_run
from orsgen.runtime.records.passk import PASS_THRESHOLD, passes

IDENTITY = ("environment", "split", "tools_sha256", "pass_threshold")
PriorError = RunError  # a prior that cannot be read, or that is of another stream


@dataclass(frozen=True)
class Identity:
    """What a pass rate is of: an environment's split, tool hash and pass threshold."""

    environment: str | None
    split: str
    tools_sha256: str
    pass_threshold: float
    known: tuple[str, ...] = IDENTITY  # the fields its run recorded (compared)

    def differences(self, other: Identity) -> list[tuple[str, object, object]]:
        return [
            (name, getattr(self, name), getattr(other, name))
            for name in IDENTITY
            if name in self.known and name in other.known
            if getattr(self, name) != getattr(other, name)
        ]


@dataclass(frozen=True)
class Prior:
    """Each covered task's pass rate, and what it was measured on (``None`` for a plain
    mapping). ``source`` names where it came from, for error messages."""

    rates: Mapping[int, float]
    identity: Identity | None
    source: str

    def check(self, stream: Identity) -> None:
        """Refuse a prior measured on another environment, split, tool hash or threshold."""
        if self.identity is None:
            return
        found = self.identity.differences(stream)
        if found:
            name, mine, theirs = found[0]
            raise PriorError(
                f"the curriculum's prior ({self.source}) was measured with {name}={mine!r}, "
                f"but the adapter trains with {name}={theirs!r}: evaluate the environment, "
                "split and tools you train on, with the same pass_threshold"
            )


def load(prior: object) -> Prior:
    kind = type(prior).__name__  # before isinstance() narrows it
    if isinstance(prior, (str, os.PathLike)):
        return _of_runs([Path(cast("str | os.PathLike[str]", prior))])
    if isinstance(prior, Mapping):
        return _of_mapping(cast(Mapping[object, object], prior))
    if isinstance(prior, FinishedRun):  # summary.json's figures, with the run's identity
        where = f"the evaluation of {prior.out}" if prior.out is not None else "an EvalResult"
        summary = prior.summary
        return _combine([(_identity(summary, where), _counts(summary, where))], where)
    if isinstance(prior, (list, tuple)):
        items = cast(Sequence[object], prior)
        if items and all(isinstance(p, (str, os.PathLike)) for p in items):
            return _of_runs([Path(cast("str | os.PathLike[str]", p)) for p in items])
    raise PriorError(
        "prior must be an evaluation run directory or a training trajectory, a list or tuple "
        f"of them, an EvalResult or a mapping from task index to pass rate, got {kind}"
    )


def _of_mapping(given: Mapping[object, object]) -> Prior:
    rates: dict[int, float] = {}
    for key, value in given.items():
        if isinstance(key, bool) or not isinstance(key, int):
            raise PriorError(f"a prior mapping's keys are task indices, got {key!r}")
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not (math.isfinite(value) and 0.0 <= value <= 1.0)
        ):
            raise PriorError(f"prior[{key}] must be a pass rate in [0, 1], got {value!r}")
        rates[key] = float(value)
    return Prior(rates, None, "a mapping")


def _of_runs(runs: list[Path]) -> Prior:
    parts: list[tuple[Identity, dict[int, tuple[int, int]]]] = []
    for run in runs:
        opened = open_run(run)
        if opened.spec.kind == "trajectory":
            parts += _of_trajectory(opened)
            continue
        if opened.summary is None:
            raise PriorError(
                f"{run} is not a finished orsgen eval run (no summary.json): pass the --out "
                "directory of a finished orsgen eval"
            )
        parts.append((_identity(opened.spec.raw, str(run)), _counts(opened.summary, str(run))))
    source = str(runs[0]) if len(runs) == 1 else f"{len(runs)} runs from {runs[0]}"
    return _combine(parts, source)


def _of_trajectory(run: Run) -> list[tuple[Identity, dict[int, tuple[int, int]]]]:
    """Each rollout of a training trajectory as a part (scored: one sample, passed or not)."""
    parts: list[tuple[Identity, dict[int, tuple[int, int]]]] = []
    for row in run.rows():
        threshold = PASS_THRESHOLD if row.pass_threshold is None else row.pass_threshold
        scored = row.verdict == "scored"
        passed = scored and passes(row.reward, threshold)
        identity = Identity(None, row.split, "", threshold, ("split", "pass_threshold"))
        parts.append((identity, {row.task_index: (int(passed), int(scored))}))
    if not parts:
        raise PriorError(f"{run.path} holds no rollout")
    return parts


def _identity(config: Mapping[str, Any], where: str) -> Identity:
    missing = [k for k in IDENTITY if k not in config]
    if missing:
        raise PriorError(f"{where} records no {', '.join(missing)}: not an orsgen eval run")
    threshold = config["pass_threshold"]
    return Identity(
        None if config["environment"] is None else str(config["environment"]),
        str(config["split"]),
        str(config["tools_sha256"]),
        float(threshold),
    )


def _counts(summary: Mapping[str, Any], where: str) -> dict[int, tuple[int, int]]:
    per_task: object = summary.get("per_task")
    if not isinstance(per_task, list):
        raise PriorError(f"{where}: summary.json has no per_task list")
    out: dict[int, tuple[int, int]] = {}
    for entry in cast(list[Mapping[str, Any]], per_task):
        scored = int(entry.get("scored", entry["samples"]))
        out[int(entry["task_index"])] = (min(int(entry["passed"]), scored), scored)
    return out


def _combine(parts: list[tuple[Identity, dict[int, tuple[int, int]]]], source: str) -> Prior:
    first = max((identity for identity, _ in parts), key=lambda i: len(i.known))
    for identity, _ in parts:
        found = first.differences(identity)
        if found:
            name, mine, theirs = found[0]
            raise PriorError(
                f"the prior's runs differ in {name} ({mine!r} and {theirs!r}): give runs "
                "of one environment, split, tool hash and pass_threshold"
            )
    totals: dict[int, list[int]] = {}
    for _, counts in parts:
        for task, (passed, scored) in counts.items():
            total = totals.setdefault(task, [0, 0])
            total[0] += passed
            total[1] += scored
    rates = {t: p / s for t, (p, s) in sorted(totals.items()) if s > 0}
    return Prior(rates, first, source)

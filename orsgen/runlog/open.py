"""``open_run(path)``: any run as one typed object (issue 47). An evaluation run, a merged
run or a replay (a run directory), or a training adapter's trajectory file or a directory of
them. Files are read through :mod:`orsgen.rundir` (its torn-line, malformed-line and
duplicate rules); anything unreadable is one :class:`RunError` naming the file and line."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import BinaryIO, Literal, cast

import orsgen.rundir as rundir
from orsgen.recorded_package import resolved
from orsgen.runlog import parse
from orsgen.runlog.record import JSON, Rollout, RunError, Source

Kind = Literal["eval", "merged", "replay", "trajectory"]


def _get(
    raw: Mapping[str, JSON], key: str, kind: type[object] | tuple[type[object], ...]
) -> object:
    value = raw.get(key)
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class RunSpec:
    """A run's settings (run.json's keys; for a trajectory file, what its lines say). ``raw``
    is the whole run.json."""

    kind: Kind
    split: str
    environment: str
    adapter: str | None = None
    model: str | None = None
    n: int | None = None
    seed: int | None = None
    task_indices: list[int] | None = None
    pass_threshold: float | None = None
    max_turns: int | None = None
    unfinished_reward: float | None = None
    merged: int | None = None  # the number of shards a merged run joined
    recorded_run: str | None = None
    raw: dict[str, JSON] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: dict[str, JSON]) -> RunSpec:
        kind: Kind = (
            "replay"
            if config.get("kind") == "replay"
            else "merged" if config.get("merged") else "eval"
        )
        tasks = config.get("task_indices")
        threshold = _get(config, "pass_threshold", (int, float))
        unfinished = _get(config, "unfinished_reward", (int, float))
        return cls(
            kind=kind,
            split=str(config.get("split") or ""),
            environment=str(config.get("environment") or ""),
            adapter=cast("str | None", _get(config, "adapter", str)),
            model=cast("str | None", _get(config, "model", str)),
            n=cast("int | None", _get(config, "n", int)),
            seed=cast("int | None", _get(config, "seed", int)),
            task_indices=[int(cast(int, t)) for t in tasks] if isinstance(tasks, list) else None,
            pass_threshold=None if threshold is None else float(cast(float, threshold)),
            max_turns=cast("int | None", _get(config, "max_turns", int)),
            unfinished_reward=None if unfinished is None else float(cast(float, unfinished)),
            merged=cast("int | None", _get(config, "merged", int)),
            recorded_run=cast("str | None", _get(config, "recorded_run", str)),
            raw=config,
        )


@dataclass(frozen=True)
class Run:
    """An opened run: ``.spec``, ``.summary`` (summary.json; ``None`` for an unfinished run
    or a trajectory file), ``.package`` (the generated package it used, when recorded) and
    ``.rows()`` (each rollout, in the file's order)."""

    path: Path
    spec: RunSpec
    summary: dict[str, JSON] | None
    package: Path | None
    files: tuple[Path, ...]

    def rows(self) -> Iterator[Rollout]:
        for path in self.files:
            yield from (rollout for _, rollout in _rows(path, self.spec))

    def located(self) -> Iterator[tuple[int, Rollout]]:
        """Each rollout of a run directory with where its line starts, for :meth:`at`."""
        return _rows(self.files[0], self.spec)

    def at(self, handle: BinaryIO, offset: int) -> Rollout:
        """The rollout whose line starts at ``offset`` of results.jsonl (open for binary
        reading): a second pass over :meth:`located`'s rows, reading one at a time."""
        row = rundir.row_at(handle, offset)
        return _rollout(self.files[0], f"at byte {offset}", row, self.spec)


def _line_numbers(path: Path) -> Iterator[tuple[int, int, Mapping[str, object]]]:
    """rundir's rows of ``path`` with each one's line number (for errors) and offset."""
    reader = rundir.checked_rows if path.name == rundir.RESULTS_FILE else rundir.numbered_rows
    try:
        yield from reader(path)
    except OSError as exc:
        raise RunError(f"cannot read {path}: {exc}") from None


def _rows(path: Path, spec: RunSpec) -> Iterator[tuple[int, Rollout]]:
    for line, offset, row in _line_numbers(path):
        yield offset, _rollout(path, f"line {line}", row, spec)


def _rollout(path: Path, where: str, row: Mapping[str, object], spec: RunSpec) -> Rollout:
    if spec.kind == "trajectory":
        return parse.checked(path, where, partial(parse.trajectory_line, row))
    source: Source = "replay" if spec.kind == "replay" else "eval"
    return parse.checked(path, where, partial(parse.eval_row, row, spec.raw, source))


def _trajectory_files(path: Path) -> tuple[Path, ...]:
    if path.is_file():
        return (path,)
    if (path / rundir.RESULTS_FILE).is_file():
        rundir.read_config(path)  # an evaluation's rows without its run.json: that error
    files = tuple(sorted(path.glob("*.jsonl")))
    if not files:
        raise RunError(
            f"{path} is not an orsgen eval run (no {rundir.RUN_FILE} and "
            f"{rundir.RESULTS_FILE}) and holds no trajectory files (*.jsonl)"
        )
    return files


def open_run(path: str | os.PathLike[str]) -> Run:
    """Open an evaluation run, a merged run, a replay, or a trajectory file or directory."""
    where = Path(path)
    if not where.exists():
        raise RunError(f"{where} does not exist")
    if where.is_dir() and (where / rundir.RUN_FILE).is_file():
        config = cast(dict[str, JSON], rundir.read_config(where))
        has_summary = (where / rundir.SUMMARY_FILE).is_file()
        summary = cast(dict[str, JSON], rundir.read_summary(where)) if has_summary else None
        return Run(
            where,
            RunSpec.from_config(config),
            summary,
            resolved(where, config),
            (where / rundir.RESULTS_FILE,),
        )
    files = _trajectory_files(where)
    first = next((r for f in files for _, r in _rows(f, _TRAJECTORY)), None)
    # The package and settings of the first line (each line records them).
    none: dict[str, JSON] = {}
    file, line = next(
        ((f, cast(dict[str, JSON], r)) for f in files for _, _, r in _line_numbers(f)),
        (where, none),
    )
    threshold = _get(line, "pass_threshold", (int, float))
    unfinished = _get(line, "unfinished_reward", (int, float))
    spec = RunSpec(
        kind="trajectory",
        split=first.split if first else "",
        environment=first.environment if first else "",
        adapter=first.environment if first else None,
        pass_threshold=None if threshold is None else float(cast(float, threshold)),
        unfinished_reward=None if unfinished is None else float(cast(float, unfinished)),
    )
    return Run(where, spec, None, resolved(file.parent, line), files)


_TRAJECTORY = RunSpec(kind="trajectory", split="", environment="")

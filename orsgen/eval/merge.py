"""``orsgen eval --merge``: the shards of one run made one run directory. run.json is checked
before a row is read; rows are streamed, each checked to be its shard's and there once.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orsgen.eval.config import EvalConfig, EvalConfigError
from orsgen.eval.endpoints import added_counts
from orsgen.eval.results import Records, ResultsLog, RunFileError, run_config, write_json
from orsgen.eval.run import EvalResult, finish
from orsgen.rundir import (
    ADAPTER_FILE,
    RESULTS_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    RunDirError,
    read_adapter,
    read_config,
    rows,
)

# The fields the shards of one run may differ in.
SHARD_FIELDS = ("shard", "endpoint")


@dataclass(frozen=True)
class _Shard:
    path: Path
    config: EvalConfig
    index: int
    count: int
    endpoint_counts: Mapping[str, Any]

    def __str__(self) -> str:
        return str(self.path)


def merge_shards(
    shards: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *, partial: bool = False
) -> EvalResult:
    """Merge the run directories of the shards of one run (``EvalConfig(shard=(I, N))``,
    ``orsgen eval --shard I/N``) into one run in ``out``: its results.jsonl holds every row
    of the shards once, and its summary.json is what the run unsharded computes from the same
    rows. With ``partial``, missing shards are allowed, and run.json records them
    (``"partial": {"shards": N, "missing": [...]}``); the summary covers the tasks present.
    run.json's ``endpoint_counts`` are the shards' added up, by endpoint.

    The shards must agree on every config field but ``shard`` and ``endpoint`` (each may have
    had its own server). Raises :class:`~orsgen.eval.EvalConfigError` (a ``ValueError``), in
    one line naming the shards or the field, for: a directory that is not a shard or not
    finished, shards that differ in configuration, a shard given twice, a missing shard, a
    row that is not its shard's or is there twice, and an ``out`` that holds a run."""
    try:
        return _merge([_read(Path(p)) for p in shards], Path(out), partial)
    except RunDirError as exc:  # a run file that cannot be read
        raise RunFileError(str(exc)) from None


def _merge(found: list[_Shard], target: Path, partial: bool) -> EvalResult:
    if not found:
        raise EvalConfigError("give the shard directories to merge")
    first = found[0]
    config = dataclasses.replace(first.config, shard=None)
    by_index: dict[int, _Shard] = {}
    for shard in found:
        _agree(first, shard)
        if shard.index in by_index:
            raise EvalConfigError(
                f"{by_index[shard.index]} and {shard} are both shard {shard.index}/{shard.count}: "
                "give each shard once"
            )
        by_index[shard.index] = shard
    missing = [i for i in range(first.count) if i not in by_index]
    if missing and not partial:
        names = " and ".join(f"{i}/{first.count}" for i in missing)
        them = "them" if len(missing) > 1 else "it"
        raise EvalConfigError(
            f"shard {names} missing: give every shard of the run, or pass --partial to merge "
            f"without {them}"
        )
    if target.resolve() in {s.path.resolve() for s in found}:
        raise RunFileError(f"--out {target} is one of the shards; merge into another directory")
    if (target / RUN_FILE).exists() or (target / RESULTS_FILE).exists():
        raise RunFileError(f"{target} already holds a run; merge into another --out")
    adapter = read_adapter(first.path)
    target.mkdir(parents=True, exist_ok=True)
    ordered = [by_index[i] for i in sorted(by_index)]
    records = _stream(ordered, config, target)
    record: dict[str, Any] = {"shards": first.count, "missing": missing} if missing else {}
    counts = added_counts(*(s.endpoint_counts for s in ordered))
    package = {"package": read_config(first.path).get("package")}  # where replay finds it
    written = {**config.to_json(), **package, **({"endpoint_counts": counts} if counts else {})}
    write_json(target / RUN_FILE, {**written, **({"partial": record} if record else {})})
    write_json(target / ADAPTER_FILE, adapter, sort_keys=False)
    present = {task for shard in ordered for task in shard.config.tasks()}
    tasks = [task for task in config.tasks() if task in present]
    summary = finish(target, config, tasks, records)
    return EvalResult(summary, target, records, None, config)


def _read(path: Path) -> _Shard:
    """A shard's directory, checked to be a finished shard run (nothing read but run.json)."""
    config, counts = run_config(path)
    if config.shard is None:
        raise RunFileError(f"{path} is a run, not a shard: merge the runs of --shard I/N")
    index, count = config.shard
    if not (path / SUMMARY_FILE).is_file():
        raise RunFileError(_unfinished(path, index, count, f"no {SUMMARY_FILE}"))
    return _Shard(path, config, index, count, counts)


def _unfinished(path: Path, index: int, count: int, why: str) -> str:
    return (
        f"{path} is unfinished ({why}): resume it first (orsgen eval ... --shard "
        f"{index}/{count} --out {path} --resume)"
    )


def _agree(first: _Shard, shard: _Shard) -> None:
    """``shard`` is of ``first``'s run: the same configuration, the same number of shards."""
    for name in first.config.differences(shard.config):
        if name in SHARD_FIELDS:
            continue
        was, now = (json.dumps(s.config.to_json()[name]) for s in (first, shard))
        if len(was) + len(now) > 80:
            was, now = "one value", "another"
        raise EvalConfigError(
            f"differs between the shards: {was} in {first} and {now} in {shard}; merge the "
            "shards of one run",
            name,
        )
    if shard.count != first.count:
        raise EvalConfigError(
            f"{first} is shard {first.index}/{first.count} but {shard} is shard "
            f"{shard.index}/{shard.count}: merge the shards of one run"
        )


def _stream(shards: Sequence[_Shard], config: EvalConfig, target: Path) -> Records:
    """The shards' rows copied, each checked, into results.jsonl, named once all are in."""
    n = config.n
    position = {task: i for i, task in enumerate(config.tasks())}
    seen = bytearray(len(position) * n)  # one byte per (task, sample) of the run
    records = Records()
    partial = target / (RESULTS_FILE + ".tmp")
    log = ResultsLog(partial)
    try:
        for shard in shards:
            mine = set(shard.config.tasks())
            count = 0
            for row in rows(shard.path / RESULTS_FILE):
                task, sample = int(row["task_index"]), int(row["sample"])
                if task not in mine or not 0 <= sample < n:
                    raise RunFileError(
                        f"{shard} holds (task {task}, sample {sample}), which is not shard "
                        f"{shard.index}/{shard.count}'s: merge the shards as orsgen eval "
                        "wrote them"
                    )
                at = position[task] * n + sample
                if seen[at]:
                    raise RunFileError(f"{shard} holds (task {task}, sample {sample}) twice")
                seen[at] = 1
                count += 1
                log.append(row)
                records.add(row)
            if count < len(mine) * n:
                why = f"{count} of {len(mine) * n} rollouts"
                raise RunFileError(_unfinished(shard.path, shard.index, shard.count, why))
    except BaseException:
        log.close()
        partial.unlink(missing_ok=True)
        raise
    log.close()
    os.replace(partial, target / RESULTS_FILE)
    return records

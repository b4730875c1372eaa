"""``orsgen merge``: the shards of one run made one run directory (docs/evaluating.md,
"Sharding"). run.json is checked before a row is read; rows are streamed, each checked to
be its shard's and there once. Every file is written whole, run.json first and
summary.json last, so the same merge rerun after a kill completes it."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orsgen.eval.config import EvalConfig, EvalConfigError
from orsgen.eval.endpoints import added_counts
from orsgen.eval.results import Records, read_records, run_config
from orsgen.eval.run import EvalResult, finish
from orsgen.identity import SHARD, identity_differences
from orsgen.recorded_package import recorded, resolved
from orsgen.rundir import ADAPTER_FILE, LOCK_FILE, PROMPTS_FILE, RESULTS_FILE, RUN_FILE
from orsgen.rundir import RUN_FILES, SUMMARY_FILE, RunError, read_adapter, read_config
from orsgen.rundir import read_summary, rows, run_rows
from orsgen.rundir import write_json, write_whole, writing


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
    shards: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    partial: bool = False,
    force: bool = False,
) -> EvalResult:
    """Merge the run directories of the shards of one run (``EvalConfig(shard=(I, N))``)
    into one run in ``out``, as the run unsharded would have written it; ``partial`` allows
    missing shards (run.json records them). Raises, in one line naming the shards or the
    field, :class:`~orsgen.eval.EvalConfigError` (a ``ValueError``) for shards of different
    runs, a shard given twice or missing, and :class:`~orsgen.RunError` for a directory that
    is not a finished shard, a row not its shard's or there twice, and an ``out`` that holds
    another run (``force`` replaces it). docs/evaluating.md ("Sharding") says more."""
    found, target = [_read(Path(p)) for p in shards], Path(out)
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
        raise RunError(f"--out {target} is one of the shards; merge into another directory")
    ordered = [by_index[i] for i in sorted(by_index)]
    facts = read_config(first.path)
    run = {**config.to_json(), "merged": len(ordered)}  # "merged": the shards of a merge
    run.update(recorded(resolved(first.path, facts), target))  # where replay finds it
    more = {
        "environment_url": facts.get("environment_url"),  # a fact, the first shard's
        "endpoint_counts": added_counts(*(s.endpoint_counts for s in ordered)) or None,
        "partial": {"shards": first.count, "missing": missing} if missing else None,
    }
    run.update((name, value) for name, value in more.items() if value is not None)
    run = json.loads(json.dumps(run))  # as run.json reads back
    made = not target.exists()
    try:
        with writing(target) as writer:
            if _earlier(target, run, force):
                print(f"{target} holds this merge, finished: nothing to do", file=sys.stderr)
                records = read_records(target / RESULTS_FILE)
                return EvalResult(read_summary(target), target, records, None, config)
            writer.start(run)
            write_json(target / ADAPTER_FILE, read_adapter(first.path), sort_keys=False)
            try:
                records = _stream(ordered, config, target)
                write_whole(target / PROMPTS_FILE, lambda log: _prompts(ordered, log))
            except RunError:  # a shard not as it must be: leave nothing
                for name in (RUN_FILE, ADAPTER_FILE, RESULTS_FILE):
                    (target / name).unlink(missing_ok=True)
                raise
            present = {task for shard in ordered for task in shard.config.tasks()}
            tasks = [task for task in config.tasks() if task in present]
            summary = finish(writer, config, tasks, records)
    except RunError:
        if made:  # nor the directory this merge made
            (target / LOCK_FILE).unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                target.rmdir()
        raise
    return EvalResult(summary, target, records, None, config)


def _earlier(target: Path, run: Mapping[str, Any], force: bool) -> bool:
    """Whether ``target`` holds this merge finished; else what an earlier one left there
    (this merge's unfinished, or with ``force`` any run) is removed."""
    held = [name for name in RUN_FILES if (target / name).exists()]
    same = RUN_FILE in held and read_config(target) == run
    if same and SUMMARY_FILE in held and not force:
        return True
    if held and not same and not force:
        raise RunError(
            f"{target} already holds a run, not this merge's: merge into another --out, or "
            "pass --force to replace it"
        )
    for name in (SUMMARY_FILE, *held):  # summary.json first: no finished look meanwhile
        (target / name).unlink(missing_ok=True)
    return False


def _read(path: Path) -> _Shard:
    """A shard's directory, checked to be a finished shard run (nothing read but run.json)."""
    config, counts = run_config(path)
    if config.shard is None:
        raise RunError(f"{path} is a run, not a shard: merge the runs of --shard I/N")
    index, count = config.shard
    if not (path / SUMMARY_FILE).is_file():
        raise RunError(_unfinished(path, index, count, f"no {SUMMARY_FILE}"))
    return _Shard(path, config, index, count, counts)


def _unfinished(path: Path, index: int, count: int, why: str) -> str:
    return (
        f"{path} is unfinished ({why}): resume it first (orsgen eval ... --shard "
        f"{index}/{count} --out {path} --resume)"
    )


def _agree(first: _Shard, shard: _Shard) -> None:
    for name in identity_differences(first.config.to_json(), shard.config.to_json(), [SHARD]):
        was, now = (json.dumps(s.config.to_json().get(name)) for s in (first, shard))
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


def _prompts(shards: Sequence[_Shard], log: Any) -> None:
    """Every shard's prompts.jsonl copied (none in a shard an older orsgen wrote)."""
    for shard in shards:
        for row in rows(shard.path / PROMPTS_FILE):
            log.write(json.dumps(row, sort_keys=True, ensure_ascii=False).encode() + b"\n")


def _stream(shards: Sequence[_Shard], config: EvalConfig, target: Path) -> Records:
    """The shards' rows copied, each checked (and there once: :func:`run_rows`)."""
    n = config.n
    records = Records()

    def copy(log: Any) -> None:
        for shard in shards:
            mine = set(shard.config.tasks())
            count = 0
            for _, row in run_rows(shard.path / RESULTS_FILE):
                task, sample = int(row["task_index"]), int(row["sample"])
                if task not in mine or not 0 <= sample < n:
                    raise RunError(
                        f"{shard} holds (task {task}, sample {sample}), which is not shard "
                        f"{shard.index}/{shard.count}'s: merge the shards as orsgen eval "
                        "wrote them"
                    )
                count += 1
                log.write(json.dumps(row, sort_keys=True, ensure_ascii=False).encode() + b"\n")
                records.add(row)
            if count < len(mine) * n:
                why = f"{count} of {len(mine) * n} rollouts"
                raise RunError(_unfinished(shard.path, shard.index, shard.count, why))

    write_whole(target / RESULTS_FILE, copy)
    return records

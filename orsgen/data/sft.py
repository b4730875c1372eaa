"""Passing rollouts of evaluation runs as a dataset for TRL's ``SFTTrainer`` (``orsgen sft``;
docs/recipes.md). The rows are read twice: the first pass keeps a few numbers and a hash per
passing rollout, the second reads the kept lines back in the dataset's order.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orsgen.arguments import Parser, at_least, number
from orsgen.data.trainset import CARD_FILE, Chosen, Kept, Run, SftError, transcript
from orsgen.data import trainset
from orsgen.runlog import Rollout
from orsgen.runtime.records.passk import passes

if TYPE_CHECKING:
    import numpy

__all__ = ["CARD_FILE", "COLUMNS", "Selection", "SftError", "select", "sft_dataset"]
COLUMNS = ("messages", "tools", "task_index", "split", "sample", "reward", "run")


@dataclass
class Selection(Chosen):
    min_reward: float | None = None


def select(
    run_dirs: Sequence[str | os.PathLike[str]],
    *,
    min_reward: float | None = None,
    per_task: int | None = None,
    allow_splits: Iterable[str] = (),
) -> Selection:
    runs = trainset.open_runs(run_dirs, per_task, allow_splits)
    chosen = Selection(runs, min_reward=min_reward, per_task=per_task)

    def kept(run: Run, row: Rollout) -> bool | None:
        least = float(run.config["pass_threshold"]) if min_reward is None else min_reward
        return True if row.verdict == "scored" and passes(row.reward, least) else None

    chosen.rows = Kept(runs, _order(chosen, *trainset.candidates(chosen, kept)), _record)
    if not chosen.rows:
        rule = (
            f"reward >= {min_reward}"
            if min_reward is not None
            else "reward >= each run's pass_threshold"
        )
        names = ", ".join(str(r.path) for r in runs)
        raise SftError(
            f"no rollout of {names} is kept (scored, {rule}): nothing to write; "
            "sample more (-n), from a stronger model, or lower --min-reward"
        )
    return chosen


def _order(
    chosen: Selection,
    c: dict[str, numpy.ndarray[Any, Any]],
    names: list[str],
    digests: numpy.ndarray[Any, Any],
) -> numpy.ndarray[Any, Any]:
    """``(run number, line offset)`` of each kept rollout (:func:`candidates`), in the
    dataset's order: identical transcripts once (the first by run, task and sample), then by
    split and task, shortest first (then by run and sample), at most ``per_task`` of a task."""
    import numpy as np

    first = np.lexsort((c["sample"], c["task"], c["run"]))
    unique = first[np.unique(digests[first], axis=0, return_index=True)[1]]
    chosen.duplicates = len(first) - len(unique)
    kept = unique[np.lexsort([c[k][unique] for k in ("sample", "run", "length", "task", "split")])]
    keep, chosen.tasks = trainset.first_per_task(
        c["split"][kept], c["task"][kept], chosen.per_task, names
    )
    chosen.over_cap = len(kept) - int(keep.sum())
    kept = kept[keep]
    return np.stack((c["run"][kept], c["offset"][kept]), axis=1)


def _record(run: Run, row: Rollout) -> dict[str, Any]:
    return {
        "messages": transcript(row.messages),
        "tools": run.tools,
        "task_index": row.task_index,
        "split": row.split,
        "sample": row.sample,
        "reward": row.reward,
        "run": run.name,
    }


def features() -> Any:
    types = ("conversation", "string", "int64", "string", "int64", "float64", "string")
    return trainset.features(COLUMNS, types)


def sft_dataset(
    run_dirs: Sequence[str | os.PathLike[str]],
    *,
    min_reward: float | None = None,
    per_task: int | None = None,
    allow_splits: Iterable[str] = (),
) -> Any:
    """The passing rollouts of ``run_dirs`` (evaluation run directories of one environment
    and one tool set) as a ``datasets.Dataset`` for TRL's ``SFTTrainer``: columns
    ``messages``, ``tools``, ``task_index``, ``split``, ``sample``, ``reward``, ``run``.

    A rollout is kept when it is scored and passes with its run's pass threshold
    (``min_reward`` instead, when given); at most ``per_task`` per task (shortest first,
    then by sample); identical transcripts once. A run of a split other than the package's
    training split, or held out by its name, is refused unless its split is in
    ``allow_splits``. Raises
    :class:`SftError` (a ``ValueError``) with a one-line message."""
    chosen = select(run_dirs, min_reward=min_reward, per_task=per_task, allow_splits=allow_splits)
    return trainset.as_dataset(chosen.rows, features())


def card(chosen: Selection) -> str:
    first = chosen.runs[0].config
    rule = (
        f"scored, reward >= {chosen.min_reward} (--min-reward)"
        if chosen.min_reward is not None
        else "scored, reward >= the run's own pass_threshold"
    )
    lines = [
        f"# SFT rows from {len(chosen.runs)} orsgen eval run(s) of {first.get('environment')}",
        "",
        f"{len(chosen.rows)} passing rollouts of {len(chosen.tasks)} tasks, in TRL's conversational "
        "tool-calling format: `messages` (user prompt, assistant turns with `tool_calls`, "
        "`tool` messages; ending with an assistant message), `tools` (the JSON schemas the "
        "model saw, one JSON string) and the provenance columns `task_index`, `split`, "
        "`sample`, `reward`, `run`. Written by `orsgen sft`; load it with "
        "`datasets.load_from_disk(...)` and train with TRL's `SFTTrainer`.",
        "",
        f"- environment `{first.get('environment')}`, tools sha256 "
        f"`{first.get('tools_sha256')}`",
        "",
        "## Where the rows came from",
        "",
        "| run | model | split | n | pass threshold | rollouts | passing |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in chosen.runs:
        c = run.config
        lines.append(
            f"| {run.name} | {c.get('model')} | {c.get('split')} | {c.get('n')} | "
            f"{c.get('pass_threshold')} | {chosen.rollouts[run.name]} | "
            f"{chosen.passing[run.name]} |"
        )
    cap = "no cap" if chosen.per_task is None else f"at most {chosen.per_task}"
    lines += [
        "",
        "## How they were filtered",
        "",
        f"- kept: {rule}",
        f"- per task: {cap} ({chosen.over_cap} left out), shortest transcript first, "
        "then by sample",
        f"- identical transcripts kept once ({chosen.duplicates} duplicates left out)",
        f"- left out: {chosen.left_out['images']} with image content (results.jsonl does "
        f"not store images), {chosen.left_out['cut']} with a text results.jsonl cut at its "
        f"limit, {chosen.left_out['no answer']} with no assistant turn",
        "- an episode that ended on its tool's answer ends with the assistant turn that made "
        "the call; tool call ids are dropped",
    ]
    tags = "orsgen, sft, tool-calling, rejection-sampling"
    return trainset.dataset_card(tags, lines, chosen.tasks, "kept")


def parser() -> Parser:
    p = trainset.run_parser(
        "orsgen sft",
        "Turn the passing rollouts of orsgen eval runs into a dataset for TRL's SFTTrainer "
        "(conversational tool-calling format, saved with save_to_disk, with a dataset card).",
    )
    p.add_argument(
        "--min-reward",
        type=number,
        help="keep scored rollouts with at least this reward (default: each run's pass "
        "threshold)",
    )
    p.add_argument(
        "--per-task",
        type=at_least(1),
        metavar="K",
        help="at most K rollouts per task, shortest first",
    )
    return p


def _write(args: Any) -> str:
    """Write :func:`sft_dataset` to ``-o`` (which must hold nothing yet) with its card."""
    target = trainset.new_out(args.out)
    chosen = select(
        args.runs, min_reward=args.min_reward, per_task=args.per_task, allow_splits=args.allow_split
    )
    trainset.write_dataset(chosen.rows, features(), target, card(chosen))
    return (
        f"wrote {len(chosen.rows)} rows ({len(chosen.tasks)} tasks) from {len(chosen.runs)} "
        f"run(s) to {args.out} (dataset card: {CARD_FILE})"
    )


def main(argv: Sequence[str]) -> int:
    return trainset.command(parser(), argv, _write)

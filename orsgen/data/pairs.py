"""Preference pairs of evaluation runs for TRL's ``DPOTrainer`` (``orsgen pairs``;
docs/recipes.md): per task, a passing rollout (chosen) beside a non-passing one (rejected).
Read in two passes as :mod:`orsgen.data.sft` reads them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from orsgen.arguments import Parser, at_least
from orsgen.data.trainset import CARD_FILE, Chosen, Kept, Run, SftError, transcript
from orsgen.data import trainset
from orsgen.identity import ONE_DATASET
from orsgen.runlog import Rollout
from orsgen.runtime.records.passk import passes

if TYPE_CHECKING:
    import numpy

__all__ = ["COLUMNS", "PairSelection", "export", "features", "select"]
COLUMNS = (
    *("prompt", "chosen", "rejected", "tools", "task_index", "split"),
    *("chosen_reward", "rejected_reward", "run"),
)


@dataclass
class PairSelection(Chosen):
    unfinished: bool = False
    pairs: dict[str, int] = field(default_factory=lambda: {})  # kept, per run name
    no_contrast: int = 0


def select(
    run_dirs: Sequence[str | os.PathLike[str]],
    *,
    per_task: int | None = None,
    unfinished: bool = False,
    allow_splits: Iterable[str] = (),
) -> PairSelection:
    """The pairs of ``run_dirs``, and how they were chosen. Raises :class:`SftError`."""
    same = {**ONE_DATASET, "pass_threshold": "pass thresholds"}
    runs = trainset.open_runs(run_dirs, per_task, allow_splits, same)
    chosen = PairSelection(runs, per_task=per_task, unfinished=unfinished)

    def candidate(run: Run, row: Rollout) -> bool | None:
        good = passes(row.reward, float(run.config["pass_threshold"]))
        allowed = ("scored", "unfinished") if unfinished and not good else ("scored",)
        return good if row.verdict in allowed else None

    chosen.rows = Kept(
        runs, _pairs(chosen, *trainset.candidates(chosen, candidate, turns=True)), _record
    )
    if not chosen.rows:
        names = ", ".join(str(r.path) for r in runs)
        rejected = "non-passing (scored" + (" or unfinished)" if unfinished else ")")
        flat = chosen.no_contrast
        dropped = f"; {flat} pairs without contrast dropped" if flat else ""
        raise SftError(
            f"no task of {names} has both a passing rollout and a {rejected} one{dropped}: "
            "no pair to write; sample more (-n) at a temperature above 0"
            + ("" if unfinished else ", or pass --unfinished")
        )
    return chosen


def _pairs(
    chosen: PairSelection,
    c: dict[str, numpy.ndarray[Any, Any]],
    names: list[str],
    digests: numpy.ndarray[Any, Any],
) -> numpy.ndarray[Any, Any]:
    """``(run number, chosen's line offset, rejected's line offset)`` of each kept pair of the
    candidates (:func:`candidates`), in the dataset's order (by split and task, then round,
    run and chosen rollout)."""
    import numpy as np

    # Each group (run, split, task): its chosen rollouts first, shortest first, then by
    # sample; then its rejected ones by sample.
    length = np.where(c["good"] == 1, c["length"], 0)
    order = np.lexsort([c["sample"], length, -c["good"], c["task"], c["split"], c["run"]])
    group = np.stack([c[k][order] for k in ("run", "split", "task")], axis=1)
    _, starts = np.unique(group, axis=0, return_index=True)
    bounds = [*np.sort(starts).tolist(), len(order)]
    found: list[numpy.ndarray[Any, Any]] = []
    for lo, hi in zip(bounds, bounds[1:]):
        members = order[lo:hi]
        bad = int(len(members) - c["good"][members].sum())
        # Identical rollouts of a group once: the pairs they would make are identical.
        same = np.column_stack([digests[members, :2], c["good"][members].astype(np.uint64)])
        members = members[np.sort(np.unique(same, axis=0, return_index=True)[1])]
        good = int(c["good"][members].sum())
        chosen.duplicates += (hi - lo - bad) * bad - good * (len(members) - good)
        pairs = _rounds(members, good)
        contrast = np.any(digests[pairs[:, 0], 2:] != digests[pairs[:, 1], 2:], axis=1)
        chosen.no_contrast += int(len(pairs) - contrast.sum())
        # A run's task gives at most per_task pairs (its first): no more are kept of the task.
        pairs = pairs[contrast]
        chosen.over_cap += max(0, len(pairs) - (chosen.per_task or len(pairs)))
        found.append(pairs[: chosen.per_task])
    pairs = np.concatenate(found) if found else np.zeros((0, 4), dtype=np.int64)
    key = [pairs[:, 3], c["run"][pairs[:, 0]], pairs[:, 2], c["task"][pairs[:, 0]]]
    pairs = pairs[np.lexsort([*key, c["split"][pairs[:, 0]]])]
    same = np.concatenate([digests[pairs[:, 0], :2], digests[pairs[:, 1], :2]], axis=1)
    first = np.sort(np.unique(same, axis=0, return_index=True)[1])
    chosen.duplicates += len(pairs) - len(first)
    pairs = pairs[first]  # still in order
    split, task = c["split"][pairs[:, 0]], c["task"][pairs[:, 0]]
    keep, chosen.tasks = trainset.first_per_task(split, task, chosen.per_task, names)
    chosen.over_cap += len(pairs) - int(keep.sum())
    pairs = pairs[keep]
    runs = c["run"][pairs[:, 0]]
    chosen.pairs = {r.name: int((runs == i).sum()) for i, r in enumerate(chosen.runs)}
    return np.stack([runs, c["offset"][pairs[:, 0]], c["offset"][pairs[:, 1]]], axis=1)


def _rounds(members: numpy.ndarray[Any, Any], good: int) -> numpy.ndarray[Any, Any]:
    """``(chosen, rejected, round, a)`` of each pair of a group whose first ``good``
    ``members`` are its chosen rollouts: round ``s`` pairs ``c[a]`` with ``r[(a + s) % F]``."""
    import numpy as np

    bad = len(members) - good
    a, s = np.tile(np.arange(good), bad), np.repeat(np.arange(bad), good)
    return np.stack([members[a], members[good + (a + s) % max(bad, 1)], s, a], axis=1)


def _start(messages: Sequence[Mapping[str, Any]]) -> int:
    return next(i for i, m in enumerate(messages) if m["role"] == "assistant")


def _record(run: Run, good: Rollout, bad: Rollout) -> dict[str, Any]:
    chosen, rejected = transcript(good.messages) or [], transcript(bad.messages) or []
    start = _start(chosen)
    return {
        "prompt": chosen[:start],
        "chosen": chosen[start:],
        "rejected": rejected[_start(rejected) :],
        "tools": run.tools,
        "task_index": good.task_index,
        "split": good.split,
        "chosen_reward": good.reward,
        "rejected_reward": bad.reward,
        "run": run.name,
    }


def features() -> Any:
    types = (*["conversation"] * 3, "string", "int64", "string", "float64", "float64", "string")
    return trainset.features(COLUMNS, types)


def export(
    run_dirs: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    per_task: int | None = None,
    unfinished: bool = False,
    allow_splits: Iterable[str] = (),
) -> PairSelection:
    """Write the pairs of ``run_dirs`` (:func:`select`) to ``out`` (which must hold nothing
    yet) with its card. Raises :class:`SftError`."""
    target = trainset.new_out(out)
    chosen = select(run_dirs, per_task=per_task, unfinished=unfinished, allow_splits=allow_splits)
    # Pair rows are large (two conversations): save_to_disk's worker, copying 64 MB shards
    # of them, grew by a fifth from 10,000 to 100,000 rollouts; with 16 MB ones it stays
    # flat (bench/results/pairs_scale.md).
    trainset.write_dataset(chosen.rows, features(), target, card(chosen), shard="16MB")
    return chosen


def card(chosen: PairSelection) -> str:
    first = chosen.runs[0].config
    rejected = "scored" + (" or unfinished" if chosen.unfinished else "") + ", not passing"
    cap = "no cap" if chosen.per_task is None else f"at most {chosen.per_task}"
    lines = [
        f"# Preference pairs from {len(chosen.runs)} orsgen eval run(s) of "
        f"{first.get('environment')}",
        "",
        f"{len(chosen.rows)} pairs of {len(chosen.tasks)} tasks in TRL's conversational "
        "preference format: `prompt` (the messages before the first assistant turn), "
        "`chosen` and `rejected` (the assistant and `tool` messages after it, ending on an "
        "assistant turn), `tools` (the JSON schemas the model saw, one JSON string) and the "
        "provenance columns `task_index`, `split`, `chosen_reward`, `rejected_reward`, `run`. "
        "Written by `orsgen pairs`; load it with `datasets.load_from_disk(...)` and train "
        "with TRL's `DPOTrainer`.",
        "",
        f"- environment `{first.get('environment')}`, tools sha256 "
        f"`{first.get('tools_sha256')}`, pass threshold {first.get('pass_threshold')}",
        "",
        "## Where the pairs came from",
        "",
        "| run | model | split | n | rollouts | passing | rejectable | pairs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in chosen.runs:
        c, name = run.config, run.name
        lines.append(
            f"| {name} | {c.get('model')} | {c.get('split')} | {c.get('n')} | "
            f"{chosen.rollouts[name]} | {chosen.passing[name]} | {chosen.failing[name]} | "
            f"{chosen.pairs.get(name, 0)} |"
        )
    lines += [
        "",
        "## How they were chosen",
        "",
        "- chosen: scored, passing by the run's pass rule; rejected: " + rejected,
        "- paired within a run's task; round s pairs the a-th chosen rollout (shortest "
        "first, then by sample) with the (a + s)-th rejected one (by sample, modulo their "
        "number)",
        f"- {chosen.no_contrast} pairs without contrast dropped (the same assistant turns; "
        "only the environment's answers differed)",
        f"- identical pairs kept once ({chosen.duplicates} duplicates left out)",
        f"- per task: {cap} ({chosen.over_cap} left out), earliest round first",
        f"- left out: {chosen.left_out['images']} rollouts with image content, "
        f"{chosen.left_out['cut']} with a text results.jsonl cut at its limit, "
        f"{chosen.left_out['no answer']} with no assistant turn",
        "- the environment's answer to the last call is not part of `chosen`/`rejected`; "
        "tool call ids are dropped",
    ]
    return trainset.dataset_card(
        "orsgen, dpo, preference, tool-calling", lines, chosen.tasks, "pairs"
    )


def parser() -> Parser:
    p = trainset.run_parser(
        "orsgen pairs",
        "Pair passing and non-passing rollouts of the same task of orsgen eval runs as a "
        "preference dataset for TRL's DPOTrainer (conversational format, saved with "
        "save_to_disk, with a dataset card).",
    )
    p.add_argument(
        "--per-task",
        type=at_least(1),
        metavar="K",
        help="at most K pairs per task, earliest round first (default: every pair)",
    )
    p.add_argument(
        "--unfinished",
        action="store_true",
        help="an unfinished rollout (no reward by the end) may be the rejected one",
    )
    return p


def _write(args: Any) -> str:
    chosen = export(
        args.runs,
        args.out,
        per_task=args.per_task,
        unfinished=args.unfinished,
        allow_splits=args.allow_split,
    )
    return (
        f"wrote {len(chosen.rows)} pairs ({len(chosen.tasks)} tasks) from {len(chosen.runs)} "
        f"run(s) to {args.out}; dropped {chosen.no_contrast} without contrast, "
        f"{chosen.duplicates} duplicates (dataset card: {CARD_FILE})"
    )


def main(argv: Sequence[str]) -> int:
    """``orsgen pairs RUN_DIR [RUN_DIR ...] -o OUT`` (exit codes: :func:`command`)."""
    return trainset.command(parser(), argv, _write)

"""Passing rollouts of evaluation runs as a dataset for TRL's ``SFTTrainer`` (``orsgen sft``):
rejection-sampling fine-tuning, so a model that rarely passes gets a start before GRPO.

Each run directory of ``orsgen eval`` holds ``run.json`` (its configuration),
``adapter.json`` (the tools the model saw, and the package's training split) and
``results.jsonl`` (one row per rollout, with its messages). A rollout is kept when it is
``scored`` and its reward is at least its run's ``pass_threshold`` (or ``min_reward``); at
most ``per_task`` per task, shortest transcript first, then by sample; identical
transcripts once. A row is TRL's conversational tool-calling format:

- ``messages``: the user prompt, the assistant turns (``tool_calls`` with
  ``function.name`` and ``function.arguments``, the JSON text the model wrote) and the
  ``tool`` messages, ending with an assistant message (an episode that ended on its tool's
  answer ends with the assistant turn that made the call: the answer teaches nothing);
- ``tools``: the JSON schemas the model saw, as one JSON string (``SFTTrainer`` loads it;
  one string spares Arrow from unifying the struct types of different schemas);
- provenance: ``task_index``, ``split``, ``sample``, ``reward`` and ``run`` (the run
  directory's name).

A run on a split other than the package's training split is refused (training on held-out
transcripts contaminates every later evaluation) unless that split is in ``allow_splits``.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orsgen.eval.results import ADAPTER_FILE, RESULTS_FILE, RUN_FILE
from orsgen.jsonobject import is_array, is_object

CARD_FILE = "README.md"
LEFT_OUT = ("images", "cut", "no answer")
# The mark orsgen.eval.conversation.cut leaves on a text results.jsonl keeps only part of.
CUT_MARK = re.compile(r"\.\.\. \(\d+ more characters\)\Z")
COLUMNS = ("messages", "tools", "task_index", "split", "sample", "reward", "run")


class SftError(ValueError):
    """Runs that cannot make a dataset as asked (one line, exit code 2)."""


@dataclass(frozen=True)
class Run:
    """One evaluation run directory, read."""

    path: Path
    config: dict[str, Any]  # run.json
    view: dict[str, Any]  # adapter.json
    rows: list[dict[str, Any]]  # results.jsonl

    @property
    def name(self) -> str:
        return self.path.name


@dataclass
class Selection:
    """The kept rows, and how they were chosen (what the dataset card says)."""

    runs: list[Run]
    rows: list[dict[str, Any]] = field(default_factory=lambda: [])
    min_reward: float | None = None
    per_task: int | None = None
    passing: dict[str, int] = field(default_factory=lambda: {})  # per run name
    duplicates: int = 0
    over_cap: int = 0
    # Passing rollouts left out, by why: "images" (results.jsonl names images, stores none),
    # "cut" (a text results.jsonl cut at its limit), "no answer" (no assistant turn).
    left_out: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LEFT_OUT, 0))

    def kept_per_task(self) -> dict[tuple[str, int], int]:
        counts: dict[tuple[str, int], int] = {}
        for row in self.rows:
            key = (str(row["split"]), int(row["task_index"]))
            counts[key] = counts.get(key, 0) + 1
        return counts


def read_run(directory: str | os.PathLike[str]) -> Run:
    """The run in ``directory``, read without changing it (a half-written last row, from a
    run still going or killed, is left out)."""
    path = Path(directory)
    if not (path / RUN_FILE).is_file() or not (path / RESULTS_FILE).is_file():
        raise SftError(f"{path} is not an orsgen eval run (no {RUN_FILE} and {RESULTS_FILE})")
    if not (path / ADAPTER_FILE).is_file():
        raise SftError(
            f"{path} has no {ADAPTER_FILE} (the tools the model saw): it was written by an "
            "older orsgen eval; evaluate again to make a dataset of it"
        )
    config = _json(path / RUN_FILE)
    view = _json(path / ADAPTER_FILE)
    data = (path / RESULTS_FILE).read_bytes()
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(data[: data.rfind(b"\n") + 1].splitlines(), 1):
        try:
            row = json.loads(line)
        except ValueError:
            raise SftError(f"{path / RESULTS_FILE}: line {number} is not JSON") from None
        rows.append(row)
    return Run(path, config, view, rows)


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise SftError(f"{path} is not JSON") from None
    if not is_object(value):
        raise SftError(f"{path} holds no JSON object")
    return dict(value)


def _check_runs(runs: Sequence[Run], allow_splits: Iterable[str]) -> None:
    """One environment and one set of tools; no held-out split unless allowed."""
    first = runs[0]
    for run in runs[1:]:
        for key, what in (("environment", "environments"), ("tools_sha256", "tool hashes")):
            if run.config.get(key) != first.config.get(key):
                raise SftError(
                    f"runs of different {what}: {first.path} has {first.config.get(key)!r}, "
                    f"{run.path} has {run.config.get(key)!r}; make one dataset per environment"
                )
    allowed = set(allow_splits)
    for run in runs:
        split, train = run.config.get("split"), run.view.get("train_split")
        if split != train and split not in allowed:
            raise SftError(
                f"{run.path} evaluated split {split!r}, not the package's training split "
                f"{train!r}: training on held-out transcripts contaminates later "
                f"evaluations; pass --allow-split {split} to use it anyway"
            )


def _message(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """One message in TRL's format (every message with the same keys, so Arrow stores one
    struct); ``None`` for content that is not text (images are not stored in results)."""
    content = raw.get("content")
    if not isinstance(content, str):
        return None
    calls: list[dict[str, Any]] = []
    if is_array(raw.get("tool_calls")):
        for call in raw["tool_calls"]:
            function = call["function"]
            arguments = function.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            calls.append(
                {"type": "function", "function": {"name": function["name"], "arguments": arguments}}
            )
    name = raw.get("name") if raw.get("role") == "tool" else None
    return {"role": raw["role"], "content": content, "tool_calls": calls or None, "name": name}


def left_out(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """Why a rollout's stored messages cannot be trained on as they are (a key of
    :data:`LEFT_OUT`), or ``None``: an image (not stored), or a text cut at its limit (the
    prompt, a tool output or a call's arguments; the transcript would not be what the model
    saw, and cut arguments are no JSON)."""
    for message in messages:
        content = message.get("content")
        if not isinstance(content, str):
            return "images"
        texts = [content]
        calls: list[Mapping[str, Any]] = message.get("tool_calls") or []
        for call in calls:
            arguments: object = call["function"].get("arguments")
            texts += [arguments] if isinstance(arguments, str) else []
        if any(CUT_MARK.search(text) for text in texts):
            return "cut"
    return None


def transcript(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """A rollout's messages as an SFT transcript ending with an assistant message, or
    ``None`` when it holds non-text content or no assistant turn. Tool call ids are dropped:
    the server makes them up, and they would make every transcript unique."""
    out: list[dict[str, Any]] = []
    for raw in messages:
        message = _message(raw)
        if message is None:
            return None
        out.append(message)
    while out and out[-1]["role"] == "tool":
        out.pop()
    if not out or out[-1]["role"] != "assistant":
        return None
    return out


def _passes(row: Mapping[str, Any], threshold: float) -> bool:
    reward = row.get("reward")
    return (
        row.get("verdict") == "scored" and isinstance(reward, (int, float)) and reward >= threshold
    )


def select(
    run_dirs: Sequence[str | os.PathLike[str]],
    *,
    min_reward: float | None = None,
    per_task: int | None = None,
    allow_splits: Iterable[str] = (),
) -> Selection:
    """The rows of the dataset, and how they were chosen. Raises :class:`SftError`."""
    if not run_dirs:
        raise SftError("no run directory given")
    if per_task is not None and per_task < 1:
        raise SftError(f"--per-task must be at least 1, got {per_task}")
    seen_paths: dict[Path, None] = {}
    for directory in run_dirs:
        seen_paths.setdefault(Path(directory).resolve(), None)
    runs = [read_run(p) for p in seen_paths]
    _check_runs(runs, allow_splits)
    chosen = Selection(runs, min_reward=min_reward, per_task=per_task)
    candidates: dict[tuple[str, int], list[tuple[int, int, int, dict[str, Any]]]] = {}
    seen: set[str] = set()
    for order, run in enumerate(runs):
        threshold = float(run.config["pass_threshold"]) if min_reward is None else min_reward
        tools = json.dumps(run.view["tools"], ensure_ascii=False)
        rows = sorted(run.rows, key=lambda r: (int(r["task_index"]), int(r["sample"])))
        passing = [r for r in rows if _passes(r, threshold)]
        chosen.passing[run.name] = len(passing)
        for row in passing:
            raw: list[Mapping[str, Any]] = row.get("messages") or []
            why = left_out(raw)
            messages = transcript(raw) if why is None else None
            if messages is None:
                chosen.left_out[why or "no answer"] += 1
                continue
            text = json.dumps(messages, sort_keys=True, ensure_ascii=False)
            if text + tools in seen:
                chosen.duplicates += 1
                continue
            seen.add(text + tools)
            record: dict[str, Any] = {
                "messages": messages,
                "tools": tools,
                "task_index": int(row["task_index"]),
                "split": str(row.get("split", run.config["split"])),
                "sample": int(row["sample"]),
                "reward": float(row["reward"]),
                "run": run.name,
            }
            key = (str(record["split"]), int(row["task_index"]))
            rank = (len(text), order, int(row["sample"]))
            candidates.setdefault(key, []).append((*rank, record))
    for key in sorted(candidates):
        ranked = sorted(candidates[key], key=lambda c: c[:3])
        keep = ranked if per_task is None else ranked[:per_task]
        chosen.over_cap += len(ranked) - len(keep)
        chosen.rows += [c[3] for c in keep]
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


def to_dataset(selection: Selection) -> Any:
    """The selection as a ``datasets.Dataset`` with :data:`COLUMNS`."""
    datasets: Any = importlib.import_module("datasets")  # ships no type information
    return datasets.Dataset.from_list([{c: row[c] for c in COLUMNS} for row in selection.rows])


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

    A rollout is kept when it is scored with a reward of at least its run's pass threshold
    (``min_reward`` instead, when given); at most ``per_task`` per task (shortest first,
    then by sample); identical transcripts once. A run of a split other than the package's
    training split is refused unless its split is in ``allow_splits``. Raises
    :class:`SftError` (a ``ValueError``) with a one-line message."""
    chosen = select(run_dirs, min_reward=min_reward, per_task=per_task, allow_splits=allow_splits)
    return to_dataset(chosen)


def export(
    run_dirs: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    min_reward: float | None = None,
    per_task: int | None = None,
    allow_splits: Iterable[str] = (),
) -> Selection:
    """Write :func:`sft_dataset` to ``out`` (``Dataset.save_to_disk``) with a dataset card
    (README.md) beside it: all of it or nothing (built beside ``out``, then renamed).
    ``out`` must not hold anything yet."""
    target = Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise SftError(f"{target} already exists and is not empty; choose another -o")
    chosen = select(run_dirs, min_reward=min_reward, per_task=per_task, allow_splits=allow_splits)
    dataset = to_dataset(chosen)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        dataset.save_to_disk(str(staging))
        (staging / CARD_FILE).write_text(card(chosen), encoding="utf-8")
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return chosen


def card(chosen: Selection) -> str:
    """The dataset card: where the rows came from, how they were filtered, how many per task."""
    first = chosen.runs[0].config
    rule = (
        f"scored, reward >= {chosen.min_reward} (--min-reward)"
        if chosen.min_reward is not None
        else "scored, reward >= the run's own pass_threshold"
    )
    tasks = chosen.kept_per_task()
    lines = [
        "---",
        "tags: [orsgen, sft, tool-calling, rejection-sampling]",
        "---",
        "",
        f"# SFT rows from {len(chosen.runs)} orsgen eval run(s) of {first.get('environment')}",
        "",
        f"{len(chosen.rows)} passing rollouts of {len(tasks)} tasks, in TRL's conversational "
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
            f"{c.get('pass_threshold')} | {len(run.rows)} | {chosen.passing[run.name]} |"
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
        "",
        "## Kept per task",
        "",
        "| split | task | kept |",
        "|---|---|---|",
        *(f"| {split} | {task} | {count} |" for (split, task), count in sorted(tasks.items())),
    ]
    return "\n".join(lines) + "\n"

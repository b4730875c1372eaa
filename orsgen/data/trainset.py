"""What ``orsgen sft`` and ``orsgen pairs`` share: the runs, checked; a rollout's messages
as a transcript in TRL's conversational tool-calling format; rows read back from
results.jsonl one at a time into ``Dataset.from_generator``, so that memory stays flat in the
number of rollouts. An unusable run is a :class:`~orsgen.runlog.RunError`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orsgen.arguments import Parser, output
from orsgen.identity import ONE_DATASET
from orsgen.jsonobject import as_array
from orsgen.rundir import RESULTS_FILE, read_adapter
from orsgen.runlog import Rollout, RunError, open_run
from orsgen.runlog import Run as Log
from orsgen.runlog.record import message_truncated
from orsgen.snapshot.splits import held_out

if TYPE_CHECKING:
    import numpy

CARD_FILE = "README.md"
SHARD = "64MB"  # the largest data file of a dataset written to disk (by default)
LEFT_OUT = ("images", "cut", "no answer")
SftError = RunError  # runs that cannot make a dataset as asked (one line, exit code 2)


@dataclass(frozen=True)
class Run:
    """One evaluation run (its rows stay on disk) and its adapter.json."""

    log: Log
    view: dict[str, Any]  # adapter.json

    @property
    def path(self) -> Path:
        return self.log.path

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def config(self) -> dict[str, Any]:  # run.json
        return self.log.spec.raw

    @property
    def tools(self) -> str:
        """The tools the model saw, as one JSON string (the ``tools`` column)."""
        return json.dumps(self.view["tools"], ensure_ascii=False)


def open_runs(
    run_dirs: Sequence[str | os.PathLike[str]],
    per_task: int | None,
    allow_splits: Iterable[str],
    same: Mapping[str, str] = ONE_DATASET,
) -> list[Run]:
    """The runs of ``run_dirs`` (a directory given twice is one run), checked: the same
    run.json keys of ``same`` (each with what its values are called); no split but the
    package's training split, and none held out by its name, unless allowed."""
    if not run_dirs:
        raise SftError("no run directory given")
    if per_task is not None and per_task < 1:
        raise SftError(f"--per-task must be at least 1, got {per_task}")
    runs: list[Run] = []
    for directory in dict.fromkeys(Path(d).resolve() for d in run_dirs):
        log = open_run(directory)
        if log.spec.kind == "trajectory":
            raise RunError(
                f"{log.path} is a training trajectory, which holds no model text (only the "
                "environment's calls) to make a dataset of; give orsgen eval run directories"
            )
        if not log.files[0].is_file():
            raise RunError(f"{log.path} is not an orsgen eval run (no {RESULTS_FILE})")
        runs.append(Run(log, read_adapter(log.path)))
    first = runs[0]
    for run in runs[1:]:
        for key, what in same.items():
            if run.config.get(key) != first.config.get(key):
                raise SftError(
                    f"runs of different {what}: {first.path} has {first.config.get(key)!r}, "
                    f"{run.path} has {run.config.get(key)!r}; make one dataset per environment"
                )
    allowed = set(allow_splits)
    for run in runs:
        split, train = run.log.spec.split, run.view.get("train_split")
        if split in allowed or (split == train and not held_out(split)):
            continue
        why = f"not the package's training split {train!r}"
        why = "held out by its name" if split == train else why
        raise SftError(
            f"{run.path} evaluated split {split!r}, {why}: training on held-out transcripts "
            f"contaminates later evaluations; pass --allow-split {split} to use it anyway"
        )
    return runs


def first_per_task(
    split: numpy.ndarray[Any, Any],
    task: numpy.ndarray[Any, Any],
    most: int | None,
    names: list[str],
) -> tuple[numpy.ndarray[Any, Any], dict[tuple[str, int], int]]:
    """Which rows, in order, are among the first ``most`` of their (split number, task)
    (all with ``None``), and how many each (split name, task) keeps."""
    import numpy as np

    pairs = np.stack((split, task), axis=1)
    _, start, which = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
    keep = np.arange(len(pairs)) - start[which.reshape(-1)] < (most or len(pairs))
    keys, counts = np.unique(pairs[keep], axis=0, return_counts=True)
    return keep, {(names[s], t): n for (s, t), n in zip(keys.tolist(), counts.tolist())}


def left_out(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """Why a rollout's stored messages cannot be trained on as they are (a key of
    :data:`LEFT_OUT`), or ``None``: an image (not stored), or a text cut at its limit (the
    prompt, a tool output or a call's arguments; the transcript would not be what the model
    saw, and cut arguments are no JSON)."""
    for message in messages:
        if not isinstance(message.get("content"), str):
            return "images"
        if message_truncated(message):
            return "cut"
    return None


def transcript(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """A rollout's messages as an SFT transcript ending with an assistant message, or
    ``None`` when it holds non-text content or no assistant turn. Tool call ids are dropped:
    the server makes them up, and they would make every transcript unique. Every message
    has the same keys, so that Arrow stores one struct."""
    out: list[dict[str, Any]] = []
    for raw in messages:
        content = raw.get("content")
        if not isinstance(content, str):
            return None  # images are not stored in results
        calls: list[dict[str, Any]] = []
        for call in as_array(raw.get("tool_calls")):
            function = call["function"]
            arguments = function.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            calls.append(
                {"type": "function", "function": {"name": function["name"], "arguments": arguments}}
            )
        name = raw.get("name") if raw.get("role") == "tool" else None
        out.append(
            {"role": raw["role"], "content": content, "tool_calls": calls or None, "name": name}
        )
    while out and out[-1]["role"] == "tool":
        out.pop()
    if not out or out[-1]["role"] != "assistant":
        return None
    return out


@dataclass(frozen=True)
class Kept:
    """A dataset's rows, each ``record(run, rollout, ...)`` of the rollouts at ``where`` (run
    number, then each line's offset), read one at a time."""

    runs: Sequence[Run]
    where: numpy.ndarray[Any, Any]
    record: Callable[..., dict[str, Any]]

    def __len__(self) -> int:
        return len(self.where)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        with ExitStack() as files:
            handles = [files.enter_context(r.log.files[0].open("rb")) for r in self.runs]
            for i in range(len(self.where)):
                number, *offsets = (int(x) for x in self.where[i])
                run = self.runs[number]
                yield self.record(run, *[run.log.at(handles[number], o) for o in offsets])


@dataclass
class Chosen:
    """A dataset's kept rows, and how they were chosen (what its dataset card says)."""

    runs: list[Run]
    per_task: int | None = None
    rows: Kept | tuple[()] = ()  # read when iterated
    rollouts: dict[str, int] = field(default_factory=lambda: {})  # per run name
    passing: dict[str, int] = field(default_factory=lambda: {})  # per run name
    failing: dict[str, int] = field(default_factory=lambda: {})  # candidates, per run name
    duplicates: int = 0
    over_cap: int = 0
    left_out: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LEFT_OUT, 0))
    tasks: dict[tuple[str, int], int] = field(default_factory=lambda: {})  # kept per task


CANDIDATE = ("run", "split", "task", "good", "length", "sample", "offset")


def candidates(
    chosen: Chosen, verdict: Callable[[Run, Rollout], bool | None], turns: bool = False
) -> tuple[dict[str, numpy.ndarray[Any, Any]], list[str], numpy.ndarray[Any, Any]]:
    """The first pass over ``chosen.runs``: the columns of :data:`CANDIDATE` of each candidate
    rollout with a transcript (``verdict(run, row)`` not ``None``, ``good`` when true;
    ``split`` an index into the sorted names, returned too), and a row of 16-byte hashes (of
    its transcript and tools; with ``turns``, of its assistant turns too). Counts in
    ``chosen`` each run's rollouts, passing and failing candidates, and those left out."""
    import numpy as np

    columns = {name: array("q") for name in CANDIDATE}
    hashes, splits = bytearray(), dict[str, int]()
    for number, run in enumerate(chosen.runs):
        tools, counts = run.tools, [0, 0, 0]  # rollouts, passing, failing
        for offset, row in run.log.located():
            counts[0] += 1
            good = verdict(run, row)
            if good is None:
                continue
            counts[2 - good] += 1
            why = left_out(row.messages)
            messages = transcript(row.messages) if why is None else None
            if messages is None:
                chosen.left_out[why or "no answer"] += 1
                continue
            text = json.dumps(messages, sort_keys=True, ensure_ascii=False)
            split = splits.setdefault(row.split, len(splits))
            values = (number, split, row.task_index, int(good), len(text), row.sample or 0)
            for name, value in zip(CANDIDATE, (*values, offset)):
                columns[name].append(value)
            said = [m for m in messages if m["role"] == "assistant"] if turns else None
            for what in [text + tools] + ([] if said is None else [json.dumps(said)]):
                hashes += hashlib.blake2b(what.encode(), digest_size=16).digest()
        chosen.rollouts[run.name], chosen.passing[run.name], chosen.failing[run.name] = counts
    c = {name: np.frombuffer(column, dtype=np.int64) for name, column in columns.items()}
    names = sorted(splits)
    c["split"] = np.array([names.index(s) for s in splits], dtype=np.int64)[c["split"]]
    return c, names, np.frombuffer(hashes, dtype=np.uint64).reshape(-1, 2 + 2 * turns)


def features(columns: Sequence[str], types: Sequence[str]) -> Any:
    """A ``datasets.Features`` of ``columns``, each a ``datasets.Value`` type or, for
    ``conversation``, :func:`transcript`'s messages: no batch's guess decides them."""
    datasets: Any = importlib.import_module("datasets")  # ships no type information
    text = datasets.Value("string")
    call = {"type": text, "function": {"name": text, "arguments": text}}
    messages = [{"role": text, "content": text, "tool_calls": [call], "name": text}]
    kinds = (messages if t == "conversation" else datasets.Value(t) for t in types)
    return datasets.Features(dict(zip(columns, kinds, strict=True)))


def as_dataset(rows: Iterable[dict[str, Any]], columns: Any, cache: Path | None = None) -> Any:
    """``rows`` (iterable from the start each time) as a ``datasets.Dataset`` of ``columns``,
    written by ``Dataset.from_generator`` into ``cache`` (default: the datasets cache)."""
    datasets: Any = importlib.import_module("datasets")
    where = None if cache is None else str(cache)
    return datasets.Dataset.from_generator(rows.__iter__, features=columns, cache_dir=where)


def dataset_card(
    tags: str, lines: Sequence[str], tasks: Mapping[tuple[str, int], int], what: str
) -> str:
    """A dataset card: front matter with ``tags``, ``lines``, then ``what`` per task."""
    rows = (f"| {split} | {task} | {n} |" for (split, task), n in sorted(tasks.items()))
    table = [f"## {what.capitalize()} per task", "", f"| split | task | {what} |", "|---|---|---|"]
    return "\n".join(["---", f"tags: [{tags}]", "---", "", *lines, "", *table, *rows]) + "\n"


def new_out(out: str | os.PathLike[str]) -> Path:
    target = Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise SftError(f"{target} already exists and is not empty; choose another -o")
    return target


def write_dataset(
    rows: Iterable[dict[str, Any]], columns: Any, out: Path, card: str, shard: str = SHARD
) -> None:
    """Write :func:`as_dataset` to ``out`` (data files of at most ``shard``) with its card:
    all of it or nothing (built beside ``out``, then renamed)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.with_name(f".{out.name}.partial-{os.getpid()}")
    cache = out.with_name(f".{out.name}.cache-{os.getpid()}")
    for old in (staging, cache):
        shutil.rmtree(old, ignore_errors=True)
    try:
        # Copied by one worker process, a shard at a time: datasets reads the Arrow file it
        # wrote back through a memory map, and the pages it touches stay in the reading
        # process's resident set, so in this one memory would grow with the dataset.
        dataset = as_dataset(rows, columns, cache)
        dataset.save_to_disk(str(staging), num_proc=1, max_shard_size=shard)
        (staging / CARD_FILE).write_text(card, encoding="utf-8")
        os.replace(staging, out)
    finally:
        for temporary in (staging, cache):
            shutil.rmtree(temporary, ignore_errors=True)


def run_parser(prog: str, description: str) -> Parser:
    p = Parser(prog=prog, description=description)
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="orsgen eval run directories")
    p.add_argument(
        "-o",
        "--out",
        required=True,
        help="the dataset directory to write (new; its directory must exist unless it is "
        "inside the working directory)",
    )
    p.add_argument(
        "--allow-split",
        action="append",
        default=[],
        metavar="NAME",
        help="use runs of this held-out split anyway (repeatable; default: only the "
        "package's training split, and not when its name marks it held out: test, eval, "
        "evaluation, valid, validation, val, dev, holdout or held-out as a word of the name, "
        "also with an s or set ending: tests, devset)",
    )
    return p


def command(p: Parser, argv: Sequence[str], write: Callable[[Any], str]) -> int:
    """Parse ``argv``, check ``-o``, then print ``write(args)`` (no progress bar). Exit 0;
    a :class:`~orsgen.runlog.RunError` is exit 2 (by the CLI), nothing written."""
    args = p.parse(list(argv))
    output(args.out, "-o")
    logging: Any = importlib.import_module("datasets.utils.logging")  # no type information
    logging.disable_progress_bar()
    print(write(args))
    return 0

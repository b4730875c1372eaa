"""The files of an evaluation run directory (``orsgen eval --out``), in one place: their
names, how their rows are read, and the verdicts a row records. ``orsgen eval`` (its resume
and ``--compare``), ``orsgen sft``, ``orsgen view`` and a curriculum's prior read them here
and nowhere else; pure, so every layer may import it.

- ``run.json``: the run's configuration (``orsgen.eval.EvalConfig``), written first;
- ``adapter.json``: what the adapter showed the model (its tools' JSON schemas) and the
  package's training split;
- ``results.jsonl``: one row per rollout, appended as each completes;
- ``summary.json``: the run's figures, written when it ends.

**A torn last line.** A JSONL line is whole when it ends with a newline. A last line
without one is still being written, or was cut by a kill: every reader leaves it out (and a
resumed run cuts it off the file, so that its rollout runs again). A whole line that is not
a JSON object is an error naming the file and the line; blank lines are skipped. Training
trajectory files are read by the same rule.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

RUN_FILE = "run.json"
ADAPTER_FILE = "adapter.json"
RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
# What a row's "verdict" (a trajectory line's "outcome") is: scored, unfinished (no reward
# by the end: a turn limit, a deadline) or failed (no answer at all).
VERDICTS = ("scored", "unfinished", "failed")
# Why a rollout ended (a row's "stop", docs/evaluating.md): the environment ended the episode,
# the model answered without a tool call, the endpoint cut its answer, --max-turns,
# --max-rollout-tokens, the rollout deadline, or the environment or the endpoint failed.
STOPS = ("finished", "no_tool_call", "length", "max_turns", "token_limit", "timeout", "error")

Row = dict[str, Any]
_MISSING = {
    RUN_FILE: "is not an orsgen eval run",
    SUMMARY_FILE: "is not a finished orsgen eval run",
    ADAPTER_FILE: "was written by an older orsgen eval, which did not record the tools the "
    "model saw; evaluate again",
}


class RunDirError(ValueError):
    """A run file that cannot be read: one line naming the file (and the line)."""


@dataclass(frozen=True)
class FinishedRun:
    """A finished evaluation (``orsgen.eval.EvalResult`` is one): ``summary`` is summary.json's
    content, ``out`` its run directory (``None`` when it wrote no files)."""

    summary: Mapping[str, Any]
    out: Path | None


def complete(data: bytes) -> bytes:
    """``data`` up to and including its last newline: the lines a writer has finished."""
    return data[: data.rfind(b"\n") + 1]


def _object(line: bytes, path: str | os.PathLike[str], number: int | str) -> Row:
    try:
        value: object = json.loads(line)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise RunDirError(f"{path}: line {number} is not a JSON object; move the file away")
    return cast(Row, value)


def located_rows(path: str | os.PathLike[str]) -> Iterator[tuple[int, Row]]:
    """``(offset, row)`` for every whole line of a JSONL file (none for a missing file),
    read one line at a time; ``offset`` is where the line starts (:func:`row_at`)."""
    if not os.path.exists(path):
        return
    with open(path, "rb") as handle:
        end = 0
        for number, line in enumerate(handle, 1):
            if not line.endswith(b"\n"):
                return  # the torn last line
            start, end = end, end + len(line)
            if line.strip():
                yield start, _object(line, path, number)


def rows(path: str | os.PathLike[str]) -> Iterator[Row]:
    """The row of every whole line of a JSONL file, read one line at a time."""
    return (row for _, row in located_rows(path))


def row_at(handle: BinaryIO, offset: int) -> Row:
    """The row whose line starts at ``offset`` of a JSONL file open for binary reading."""
    handle.seek(offset)
    return _object(handle.readline(), handle.name, f"at byte {offset}")


def read_json(path: str | os.PathLike[str]) -> Row:
    """The JSON object a file holds."""
    try:
        value: object = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunDirError(f"cannot read {path}: {exc}") from None
    if not isinstance(value, dict):
        raise RunDirError(f"{path} holds no JSON object")
    return cast(Row, value)


def _read(directory: str | os.PathLike[str], name: str) -> Row:
    if not (Path(directory) / name).is_file():
        raise RunDirError(f"{directory} {_MISSING[name]} (no {name})")
    return read_json(Path(directory) / name)


def read_config(directory: str | os.PathLike[str]) -> Row:
    """run.json: the run's configuration."""
    return _read(directory, RUN_FILE)


def read_summary(directory: str | os.PathLike[str]) -> Row:
    """summary.json: the figures of a finished run."""
    return _read(directory, SUMMARY_FILE)


def read_adapter(directory: str | os.PathLike[str]) -> Row:
    """adapter.json: the tools the model saw (``tools``) and the package's ``train_split``."""
    return _read(directory, ADAPTER_FILE)


def write_whole(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` whole: a reader sees the old file or the new one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(target)

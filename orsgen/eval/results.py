"""The files of an evaluation run: ``run.json`` (the configuration, written first, so a
resumed run can be checked against it), ``adapter.json`` (what the adapter showed the
model: its tools' JSON schemas and the package's training split, which ``orsgen sft``
reads), ``results.jsonl`` (one row per rollout, appended
and fsynced as each completes) and ``summary.json``."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

RUN_FILE = "run.json"
RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
ADAPTER_FILE = "adapter.json"
# A changed one of these makes earlier rows a different experiment: resume refuses.
IDENTITY_KEYS = (
    "model",
    "endpoint",
    "environment",
    "adapter",
    "adapter_version",
    "tools_sha256",
    "split",
    "n",
    "task_indices",
    "max_turns",
    "temperature",
    "max_tokens",
    "seed",
    "pass_threshold",
    "unfinished_reward",
)


class RunFileError(Exception):
    """An output directory that cannot be used as asked (one line, for exit code 2)."""


def write_json(path: Path, value: Any, sort_keys: bool = True) -> None:
    """Write JSON atomically (a temporary file renamed over the target). ``sort_keys=False``
    keeps the key order, which is part of the text when it is rendered for a model."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=2, sort_keys=sort_keys) + "\n")
    os.replace(tmp, path)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The complete rows of results.jsonl. A half-written last line (a run killed while
    writing it) is cut off the file, so that rollout runs again; a broken line before the
    last is an error."""
    if not path.exists():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with path.open("r+b") as fh:
            fh.truncate(end)
            fh.flush()
            os.fsync(fh.fileno())
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(data[:end].splitlines(), 1):
        try:
            row = json.loads(line)
        except ValueError:
            raise RunFileError(f"{path}: line {number} is not JSON; move the file away") from None
        rows.append(row)
    return rows


def check_resume(out: Path, config: Mapping[str, Any], resume: bool) -> None:
    """Refuse to mix runs: a directory with rows needs ``--resume``, and ``--resume`` needs
    the same configuration (the first difference is named)."""
    run_file = out / RUN_FILE
    if not run_file.exists():
        if (out / RESULTS_FILE).exists():
            raise RunFileError(f"{out} holds results.jsonl but no {RUN_FILE}; use another --out")
        return
    if not resume:
        raise RunFileError(f"{out} already holds a run; pass --resume to continue it")
    before = json.loads(run_file.read_text())
    for key in IDENTITY_KEYS:
        if before.get(key) != config.get(key):
            raise RunFileError(
                f"cannot resume: {key} was {_short(before.get(key))} and is now "
                f"{_short(config.get(key))}; use another --out for a different run"
            )


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


class ResultsLog:
    """results.jsonl opened for appending; one row written, flushed and fsynced per call,
    from any thread."""

    def __init__(self, path: Path) -> None:
        self._fh = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def append(self, row: Mapping[str, Any]) -> None:
        line = json.dumps(row, sort_keys=True, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            self._fh.write(line)
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        with self._lock:
            self._fh.close()

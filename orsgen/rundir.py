"""The files of a run directory (``orsgen eval --out``), in one place: their names, how
their rows are read and written, and the verdicts a row records (docs/internals.md). It
imports only the standard library, so every layer may import it.

One process writes at a time (:func:`writing`), through one :class:`RunWriter`: run.json
first, rows appended (:class:`Appender`: one rollout's or one group's rows in one write),
every other file written whole (:func:`write_whole`), summary.json last. A last line with no
newline is torn: readers leave it out, and a writer cuts it off before appending
(:func:`cut_torn`). A whole line that is not a JSON object, or a (task, sample) pair found
twice (:func:`run_rows`), is an error naming the file and the line (training's task table
warns and skips it instead: training never stops on its own log).
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import json
import mmap
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar, cast

RUN_FILE = "run.json"
ADAPTER_FILE = "adapter.json"
RESULTS_FILE = "results.jsonl"
PROMPTS_FILE = "prompts.jsonl"  # {"task_index", "split", "prompt"}: each task's prompt, whole
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.md"
RUN_FILES = (RUN_FILE, ADAPTER_FILE, RESULTS_FILE, PROMPTS_FILE, SUMMARY_FILE, REPORT_FILE)
LOCK_FILE = ".lock"  # held (flock) by the one process writing the run: its pid and host
# results.jsonl is flushed row by row (a killed process loses nothing), and each row is
# fsynced within this many seconds and on close (a lost machine loses at most this many
# seconds of rows), at most once in this many seconds while rows keep coming.
FSYNC_EVERY = 1.0
# A row's "verdict" (a trajectory line's "outcome") and "stop": docs/evaluating.md.
VERDICTS = ("scored", "unfinished", "failed")
STOPS = ("finished", "no_tool_call", "length", "max_turns", "token_limit", "timeout", "error")

Row = dict[str, Any]
_Rows = TypeVar("_Rows")
_Report = Callable[[Path, Mapping[str, Any], _Rows], object]  # writes report.md
_MISSING = {
    RUN_FILE: "is not an orsgen eval run",
    SUMMARY_FILE: "is not a finished orsgen eval run",
    ADAPTER_FILE: "was written by an older orsgen eval, which did not record the tools the "
    "model saw; evaluate again",
}


class RunError(ValueError):
    """A run that cannot be read: one line naming the file (and the line). Every reader
    raises it (:func:`orsgen.open_run` among them); the CLI alone maps it to exit 2."""


@dataclass(frozen=True)
class FinishedRun:
    """A finished evaluation (``orsgen.eval.EvalResult`` is one); ``out`` is ``None`` when it
    wrote no files."""

    summary: Mapping[str, Any]
    out: Path | None


def complete(data: bytes) -> bytes:
    """``data`` up to and including its last newline: the lines a writer has finished."""
    return data[: data.rfind(b"\n") + 1]


def parsed(line: bytes, path: str | os.PathLike[str], number: int | str) -> Row:
    """The JSON object of a whole line (the malformed-line rule: :class:`RunError`)."""
    try:
        value: object = json.loads(line)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise RunError(f"{path}: line {number} is not a JSON object; move the file away")
    return cast(Row, value)


def located_rows(path: str | os.PathLike[str]) -> Iterator[tuple[int, Row]]:
    """``(offset, row)`` for every whole line of a JSONL file (none for a missing file)."""
    return ((offset, row) for _, offset, row in numbered_rows(path))


def numbered_rows(path: str | os.PathLike[str]) -> Iterator[tuple[int, int, Row]]:
    """``(line number, offset, row)`` for every whole line of a JSONL file."""
    if not os.path.exists(path):
        return
    with open(path, "rb") as handle:
        end = 0
        for number, line in enumerate(handle, 1):
            if not line.endswith(b"\n"):
                return  # the torn last line
            start, end = end, end + len(line)
            if line.strip():
                yield number, start, parsed(line, path, number)


def rows(path: str | os.PathLike[str]) -> Iterator[Row]:
    return (row for _, row in located_rows(path))


def row_at(handle: BinaryIO, offset: int) -> Row:
    """The row whose line starts at ``offset`` of a JSONL file open for binary reading."""
    handle.seek(offset)
    return parsed(handle.readline(), handle.name, f"at byte {offset}")


def read_json(path: str | os.PathLike[str]) -> Row:
    try:
        value: object = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunError(f"cannot read {path}: {exc}") from None
    if not isinstance(value, dict):
        raise RunError(f"{path} holds no JSON object")
    return cast(Row, value)


def _read(directory: str | os.PathLike[str], name: str) -> Row:
    if not (Path(directory) / name).is_file():
        raise RunError(f"{directory} {_MISSING[name]} (no {name})")
    return read_json(Path(directory) / name)


def read_config(directory: str | os.PathLike[str]) -> Row:
    return _read(directory, RUN_FILE)


def read_summary(directory: str | os.PathLike[str]) -> Row:
    return _read(directory, SUMMARY_FILE)


def read_adapter(directory: str | os.PathLike[str]) -> Row:
    return _read(directory, ADAPTER_FILE)


def run_rows(path: str | os.PathLike[str]) -> Iterator[tuple[int, Row]]:
    """:func:`located_rows` of a results.jsonl, each with an integer ``task_index`` and
    ``sample``, each (task, sample) pair once."""
    return ((offset, row) for _, offset, row in checked_rows(path))


def checked_rows(path: str | os.PathLike[str]) -> Iterator[tuple[int, int, Row]]:
    """:func:`run_rows` with each row's line number first."""
    seen: set[tuple[int, int]] = set()
    for number, offset, row in numbered_rows(path):
        for name in ("task_index", "sample"):
            value = row.get(name)
            if not isinstance(value, int) or isinstance(value, bool):
                held = "has no" if value is None else f"has {json.dumps(value)[:40]} as its"
                raise RunError(
                    f"{path}: line {number} {held} {name} (an integer): it is not a row "
                    "orsgen eval wrote; move the file away"
                )
        pair = (int(row["task_index"]), int(row["sample"]))
        if pair in seen:
            raise RunError(
                f"{path} holds (task {pair[0]}, sample {pair[1]}) twice; it was written by "
                "two processes at once: evaluate again into another --out"
            )
        seen.add(pair)
        yield number, offset, row


def cut_torn(path: str | os.PathLike[str]) -> None:
    """Cut a torn last line (:func:`complete`) off a file, before appending to it."""
    if not os.path.exists(path) or not os.path.getsize(path):
        return
    with open(path, "r+b") as handle:
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            end, size = data.rfind(b"\n") + 1, len(data)
        if end < size:
            handle.truncate(end)
            os.fsync(handle.fileno())


def write_whole(target: Path, data: str | Callable[[BinaryIO], None]) -> None:
    """Write ``data`` (text, or a function writing to a binary file) to ``target`` whole:
    a unique temporary name beside it, fsync, rename. A killed writer leaves a temporary
    file no one appends to (:func:`writing` removes it)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = _created(target)
    try:
        with open(fd, "wb") as handle:
            if isinstance(data, str):
                handle.write(data.encode("utf-8"))
            else:
                data(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise


def _created(target: Path) -> tuple[int, Path]:
    """A new temporary file beside ``target`` under a name unique to this writer. Mode 0666
    less the umask: ``mkstemp``'s 0600 would survive the rename (no one else could read a run)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    while True:
        temporary = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(temporary, flags, 0o666), temporary
        except FileExistsError:
            continue


def write_json(target: Path, value: Any, sort_keys: bool = True) -> None:
    """Write JSON whole (:func:`write_whole`); ``sort_keys=False`` keeps the key order (part
    of the text a model is shown)."""

    def dump(handle: BinaryIO) -> None:
        text = codecs.getwriter("utf-8")(handle)
        json.dump(value, text, indent=2, sort_keys=sort_keys, default=dict)
        text.write("\n")

    write_whole(target, dump)


class RunWriter:
    """The writer of a run directory (:func:`writing` yields it): run.json first
    (:meth:`start`), then the rows and the other files, summary.json last (:meth:`finish`)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._run: dict[str, Any] = {}

    def start(self, config: Mapping[str, Any], **facts: Any) -> None:
        """run.json: the run's configuration and ``facts`` (one given as ``None`` is left out)."""
        self._run = dict(config)
        self.update(**facts)

    def update(self, **facts: Any) -> None:
        self._run.update((name, value) for name, value in facts.items() if value is not None)
        write_json(self.directory / RUN_FILE, self._run)

    def rows(self) -> Appender:
        return Appender(self.directory / RESULTS_FILE)

    def finish(self, summary: Mapping[str, Any], report: _Report[_Rows], rows: _Rows) -> None:
        """``report(directory, summary, rows)`` (report.md), then summary.json, last."""
        report(self.directory, summary, rows)
        write_json(self.directory / SUMMARY_FILE, summary)


@contextlib.contextmanager
def writing(directory: Path) -> Generator[RunWriter]:
    """Hold the run directory's lock for the block (an ``flock``, which the kernel releases
    when its holder dies: never stale), and yield its :class:`RunWriter`. Another process is
    refused, naming the holder; temporary files a killed writer left are removed."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK_FILE, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = ""
            for _ in range(100):  # the holder writes its name just after taking the lock
                handle.seek(0)
                holder = handle.read().strip()
                if holder:
                    break
                time.sleep(0.01)
            raise RunError(
                f"{directory} is being written by {holder or 'another process'}: one process "
                "writes a run at a time; wait for it to end, or stop it"
            ) from None
        handle.truncate(0)
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        handle.flush()
        for name in RUN_FILES:
            for left in directory.glob(f".{name}.*.tmp"):
                left.unlink(missing_ok=True)
        yield RunWriter(directory)


class Appender:
    """A JSONL file opened for appending (a torn last line cut off first), from any thread:
    each :meth:`append` is one write, fsynced within ``FSYNC_EVERY`` seconds and on close.
    Rows appended after :meth:`close` (rollouts abandoned by an interruption) are dropped."""

    def __init__(self, path: Path) -> None:
        cut_torn(path)
        self._fh = path.open("ab", buffering=0)
        self._lock = threading.Lock()
        self._synced = time.monotonic()
        self._timer: threading.Timer | None = None  # the sync due for rows written since
        self._dirty = False  # rows written since the last sync

    def append(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Write ``rows`` (one rollout's, or one group's) in one write."""
        text = "".join(
            json.dumps(row, sort_keys=True, ensure_ascii=False, default=str) + "\n" for row in rows
        )
        data = memoryview(text.encode("utf-8"))
        with self._lock:
            if self._fh.closed:
                return
            while data:  # one write but on a full disk or a signal
                data = data[self._fh.write(data) or 0 :]
            self._dirty = True
            waited = time.monotonic() - self._synced
            if waited >= FSYNC_EVERY:
                self._sync()
            elif self._timer is None:  # the row's sync, a second after the last at most
                self._timer = threading.Timer(FSYNC_EVERY - waited, self._due)
                self._timer.daemon = True  # close() syncs: an exit need not wait for it
                self._timer.start()

    def _due(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._sync()

    def _sync(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._dirty:
            os.fsync(self._fh.fileno())
            self._dirty, self._synced = False, time.monotonic()

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._sync()
                self._fh.close()

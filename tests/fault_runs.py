"""Faults injected into real ``orsgen eval`` processes, and what their run directory must hold
afterwards (tests/test_eval_faults.py).

A run is ``orsgen eval`` as a user types it, in its own process, against a real ORS server
and the scripted stand-in endpoint (tests/openai_standin.py ``--quote``: every rollout's
answers, and so its reward, are fixed by its task, sample and turn). Each run sends its own
endpoint key, a label the stand-in counts requests by (``received``) and can hold requests
of (``hold``). A fault is a signal sent when something is seen: a row count in
results.jsonl, a line on stderr, a file or a number of bytes in ``--out``, requests held
in flight. What a run must end as is the uninterrupted run's: every (task, sample) once,
the same rows, and the same summary.json apart from timing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai_standin
from conftest import ROOT

SEED = 11  # --seed: with --quote 3 the echo environment's rewards mix passes and failures
N = 3  # samples per task
ROW_FIELDS = ("verdict", "reward", "group_reward", "reason", "messages")  # timing aside
Row = dict[str, Any]


def _default_sigint() -> None:
    # A shell's background jobs ignore SIGINT, and Python then installs no handler for it;
    # a terminal's foreground orsgen has the default one (tests/test_cli_interrupt.py).
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass
class Run:
    """One ``python -m orsgen eval ARGS`` process, its output in ``log``.out and .err."""

    args: list[str]
    log: Path
    process: subprocess.Popen[bytes] = field(init=False)
    started: float = field(init=False)

    def __post_init__(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
        env.update({"OPENREWARD_DISABLE_UPDATE_CHECK": "1", "PYTHONPATH": str(ROOT)})
        env.pop("OPENAI_API_KEY", None)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.with_suffix(".out").open("wb") as out:
            with self.log.with_suffix(".err").open("wb") as err:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "orsgen", "eval", *self.args],
                    cwd=ROOT,
                    env=env,
                    stdout=out,
                    stderr=err,
                    preexec_fn=_default_sigint,
                )
        self.started = time.monotonic()

    @property
    def pid(self) -> int:
        return self.process.pid

    def said(self) -> str:
        return self.log.with_suffix(".err").read_text(errors="replace")

    def printed(self) -> str:
        return self.log.with_suffix(".out").read_text(errors="replace")

    def wait(self, timeout: float = 300) -> int:
        try:
            return self.process.wait(timeout=timeout)
        finally:
            self.stop()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

    def __str__(self) -> str:
        return f"pid {self.pid}: exit {self.process.poll()}, stderr {self.said()[-600:]!r}"


def finish(run: Run, timeout: float = 300) -> tuple[int, str, str]:
    """Wait for ``run`` to end: (exit code, stdout, stderr)."""
    code = run.wait(timeout)
    return code, run.printed(), run.said()


# --- What is seen in a run directory ----------------------------------------------------


def row_lines(out: Path) -> int:
    """The whole lines in ``out``'s results.jsonl (0 without one)."""
    try:
        return (out / "results.jsonl").read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def row_files(out: Path) -> dict[str, int]:
    """The size of each file in ``out`` that holds a merge's rows as it writes them, whatever
    its name (results.jsonl, a temporary file named after it)."""
    try:
        return {p.name: p.stat().st_size for p in out.iterdir() if "results.jsonl" in p.name}
    except FileNotFoundError:
        return {}


def written_since(out: Path, before: Mapping[str, int]) -> int:
    """The row bytes written into ``out`` since ``row_files`` was ``before``: new files whole,
    grown files by what they grew."""
    return sum(max(0, size - before.get(name, 0)) for name, size in row_files(out).items())


def listing(out: Path) -> str:
    """``out``'s files and sizes, for a kill point's record."""
    if not out.is_dir():
        return "no directory"
    return ", ".join(f"{p.name} {p.stat().st_size}" for p in sorted(out.iterdir()) if p.is_file())


def whole_rows(path: Path) -> list[Row]:
    """The rows of a JSONL file's whole lines (a torn last line is left out, as readers do)."""
    if not path.exists():
        return []
    data = path.read_bytes()
    return [json.loads(line) for line in data[: data.rfind(b"\n") + 1].splitlines() if line]


def pair(row: Mapping[str, Any]) -> tuple[int, int]:
    return int(row["task_index"]), int(row["sample"])


def timing(key: str) -> bool:
    """Whether a summary.json key is a timing figure: each tool's ``mean_s`` and ``p90_s``
    today (and any ``*_s``, ``*seconds*`` or ``*cpu*`` figure a later summary adds)."""
    return key.endswith("_s") or "seconds" in key or "cpu" in key


def untimed(value: Any) -> Any:
    """``value`` (summary.json) without its timing figures, at any depth."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if not timing(k)}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def requests_counted(out: Path) -> int:
    """The endpoint requests run.json records (``endpoint_counts``), over every endpoint."""
    counts = read_json(out / "run.json").get("endpoint_counts") or {}
    return sum(int(c.get("requests", 0)) for c in counts.values())


@dataclass(frozen=True)
class Reference:
    """The uninterrupted run a faulted one must end as: its rows by pair, its summary."""

    out: Path

    @property
    def rows(self) -> dict[tuple[int, int], Row]:
        return {pair(r): r for r in whole_rows(self.out / "results.jsonl")}

    @property
    def summary(self) -> Any:
        return read_json(self.out / "summary.json")


def same(row: Mapping[str, Any], other: Mapping[str, Any], fields: Sequence[str]) -> bool:
    return all(row.get(f) == other.get(f) for f in fields)


def partial_problems(
    out: Path,
    ref: Reference,
    n: int = N,
    groups: Collection[int] | None = None,
    fields: Sequence[str] = ROW_FIELDS,
) -> list[str]:
    """What is wrong with the rows an interrupted run left: a pair twice, a row that is not
    the uninterrupted run's, and (``groups``: the tasks whose part a test wrote itself) part
    of a group."""
    problems: list[str] = []
    rows, expected = whole_rows(out / "results.jsonl"), ref.rows
    pairs = [pair(r) for r in rows]
    twice = sorted(p for p, times in Counter(pairs).items() if times > 1)
    if twice:
        problems.append(f"pairs written twice: {twice}")
    wrong = [
        pair(r) for r in rows if pair(r) not in expected or not same(r, expected[pair(r)], fields)
    ]
    if wrong:
        problems.append(f"rows unlike the uninterrupted run's: {sorted(set(wrong))}")
    if groups is not None:  # a group's rows are one append: none or all n on disk
        sizes = Counter(task for task, _ in set(pairs))
        parts = {t: size for t, size in sizes.items() if size != n and t not in groups}
        if parts:
            problems.append(f"part of a group on disk (task: rows): {parts}")
    return problems


def final_problems(
    out: Path, ref: Reference, fields: Sequence[str] = ROW_FIELDS, config: bool = False
) -> list[str]:
    """What differs between a finished run and the uninterrupted one: every pair once, the
    same rows (``fields``), results.jsonl's rows as many as summary.json's ``rollouts``, the
    same summary.json apart from timing (and with ``config``, the same run.json)."""
    problems = partial_problems(out, ref, fields=fields)
    rows = whole_rows(out / "results.jsonl")
    missing = sorted(set(ref.rows) - {pair(r) for r in rows})
    if missing:
        problems.append(f"pairs missing: {missing}")
    if not (out / "summary.json").is_file():
        return [*problems, f"no summary.json ({listing(out)})"]
    summary = read_json(out / "summary.json")
    if len(rows) != summary.get("rollouts"):
        problems.append(f"{len(rows)} rows but summary.json says {summary.get('rollouts')}")
    if untimed(summary) != untimed(ref.summary):
        keys = sorted(
            k
            for k in set(summary) | set(ref.summary)
            if untimed(summary.get(k)) != untimed(ref.summary.get(k))
        )
        problems.append(f"summary.json differs from the uninterrupted run's in {keys}")
    if config:
        got, want = read_json(out / "run.json"), read_json(ref.out / "run.json")
        # The package is recorded relative to its run directory: compare where it points.
        for run, config_ in ((out, got), (ref.out, want)):
            if isinstance(config_.get("package"), str):
                config_["package"] = str((run / config_["package"]).resolve())
        keys = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
        if keys:
            diffs = "; ".join(f"{k}: {got.get(k)!r} != {want.get(k)!r}" for k in keys)
            problems.append(f"run.json differs from the uninterrupted run's in {diffs}")
    return problems


# --- Faults -------------------------------------------------------------------------------

Ready = Callable[[], bool]


def wait_until(run: Run, ready: Ready, limit: float = 240) -> str | None:
    """Wait until ``ready()``: ``None``, or why not (``run`` ended first, or time ran out)."""
    deadline = time.monotonic() + limit
    while not ready():
        if run.process.poll() is not None:
            return f"the run ended before its kill point ({run})"
        if time.monotonic() > deadline:
            run.stop()
            return f"the kill point was not reached in {limit:g} s ({run})"
        time.sleep(0.01)
    return None


def signal_when(run: Run, ready: Ready, sig: int, limit: float = 240) -> str | None:
    """Send ``sig`` to ``run`` once ``ready()``; ``None``, or why the fault did not happen
    as asked (the run ended first, or did not end within 30 s of the signal)."""
    why = wait_until(run, ready, limit)
    if why is not None:
        return why
    run.process.send_signal(sig)
    try:
        run.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        run.stop()
        return f"the run did not end within 30 s of {signal.Signals(sig).name} ({run})"
    return None


def held_in_flight(standin: openai_standin.Standin, key: str, at: Ready, count: int) -> Ready:
    """Ready once ``at()`` and then ``count`` requests of ``key`` held at the endpoint: no
    worker is between requests (the endpoint's count and the run's agree to the request)."""
    holding = [False]

    def ready() -> bool:
        if not holding[0]:
            if not at():
                return False
            standin.hold(key)
            holding[0] = True
        return standin.waiting(key) >= count

    return ready


def one_line(code: int, out: str, err: str, *said: str) -> str | None:
    """``None`` if the process was refused (exit 2) in one line saying each of ``said``."""
    if code == 2 and out == "" and err.count("\n") == 1 and all(s in err for s in said):
        return None
    return f"not refused in one line naming {said}: exit {code}, stdout {out!r}, stderr {err!r}"


def holder_named(err: str, pid: int) -> bool:
    """A refusal that names the lock's holder: its pid and this host."""
    return str(pid) in err and socket.gethostname() in err


# --- Shards ------------------------------------------------------------------------------


def shards_of(ref: Reference, root: Path, count: int, n: int) -> list[Path]:
    """``count`` shard run directories of the reference's run with ``n`` samples per task, as
    ``orsgen eval --shard I/N`` writes them: sample ``s`` is the reference's row of sample
    ``s % N`` (large shards for a merge that takes long enough to be killed partway)."""
    from orsgen.eval import EvalConfig
    from orsgen.eval.results import Records
    from orsgen.eval.run import finish as summarize_run

    config = read_json(ref.out / "run.json")
    rows = ref.rows
    shards = []
    for i in range(count):
        shard = root / f"shard-{i}"
        shard.mkdir(parents=True)
        written = {**config, "n": n, "shard": [i, count]}
        tasks = EvalConfig.from_json(written).tasks()
        records = Records()
        with (shard / "results.jsonl").open("w") as fh:
            for task in tasks:
                for sample in range(n):
                    row = {**rows[(task, sample % N)], "sample": sample}
                    fh.write(json.dumps(row, sort_keys=True) + "\n")
                    records.add(row)
        (shard / "run.json").write_text(json.dumps(written, indent=2))
        shutil.copy(ref.out / "adapter.json", shard / "adapter.json")
        summary = summarize_run(None, EvalConfig.from_json(written), tasks, records)
        (shard / "summary.json").write_text(json.dumps(summary, indent=2, default=dict))
        shards.append(shard)
    return shards


def merge_args(shards: Iterable[Path], out: Path, *extra: str) -> list[str]:
    return ["--merge", *map(str, shards), "--out", str(out), *extra]

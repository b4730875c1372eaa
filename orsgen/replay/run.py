"""Replaying a recorded evaluation: per recorded rollout, a session on the same task (split
and index) and the recorded calls, in order, through the generated package's adapter (no
model). The run's files are written as ``orsgen eval`` writes its own (:mod:`orsgen.rundir`).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orsgen.eval.conversation import Conversation
from orsgen.eval.workers import Adapters
from orsgen.jsonobject import as_object
from orsgen.replay import compare
from orsgen.replay.summary import report, summarize
from orsgen.runtime.errors import OrsRuntimeError, ToolCallFailure
from orsgen.rundir import RESULTS_FILE, RUN_FILE, SUMMARY_FILE, Appender, RunDirError, read_config
from orsgen.rundir import rows, write_json, write_run, writing


class ReplayError(ValueError):
    """A run that cannot be replayed as asked (one line, exit code 2)."""


@dataclass(frozen=True)
class Recording:
    """A recorded evaluation: its directory, run.json, rows and generated package."""

    run: Path
    config: Mapping[str, Any]
    rows: Sequence[Mapping[str, Any]]
    package: Path


def load(run: str | Path, package: str | None = None) -> Recording:
    """The recorded run in ``run``, its package ``package`` or the one run.json names."""
    path = Path(run)
    try:
        config = read_config(path)
        found = list(rows(path / RESULTS_FILE))
    except RunDirError as exc:
        raise ReplayError(str(exc)) from None
    if not found:
        raise ReplayError(f"{path} holds no recorded rollout (no rows in {RESULTS_FILE})")
    if any(compare.calls_of(r) is None for r in found):
        raise ReplayError(
            f"{path} records no tool calls to replay (rows without env_calls: an older orsgen "
            "eval wrote it); evaluate again to record them"
        )
    where = package or config.get("package")
    if not where:
        raise ReplayError(f"{path / RUN_FILE} names no package; give its directory with --package")
    if not (Path(where) / "adapter.py").is_file():
        hint = "" if package else "; it has moved: give its directory with --package"
        raise ReplayError(f"{where} is not a generated package (no adapter.py){hint}")
    return Recording(path, config, found, Path(where))


def once(env: Any, recorded: Mapping[str, Any], split: str, unfinished: Any) -> compare.Replayed:
    """One replay of a recorded rollout on ``env``: its task's session, then its calls until
    the episode finishes (the calls after that are not made, as a model's loop stops)."""
    started = time.monotonic()
    opened = Conversation.open(env, int(recorded["task_index"]), split)
    if opened.failure is not None:
        return compare.Replayed(None, "failed", opened.failure, [], opened.seconds)
    for call in compare.calls_of(recorded) or []:
        if env.rollout.finished:
            break
        try:
            env.rollout.call(str(call.get("tool")), dict(as_object(call.get("arguments"))))
        except ToolCallFailure:
            pass  # recorded in the rollout's calls, compared with the recording
    outcome = env.rollout.outcome()
    reward = outcome.reward
    if outcome.kind == "unfinished" and reward is None:
        reward = unfinished  # as orsgen eval's row has it
    made = [c.replayable() for c in env.rollout.calls if c.sent]
    seconds = time.monotonic() - started
    return compare.Replayed(reward, outcome.kind, outcome.reason, made, seconds)


def replay(
    make: Callable[[], Any],
    recording: Recording,
    out: Path,
    facts: Mapping[str, Any],
    concurrency: int = 1,
) -> dict[str, Any]:
    """Replay every recorded rollout ``facts["repeat"]`` times on adapters from ``make``,
    ``concurrency`` at once; write run.json (``facts``), results.jsonl (one row per recorded
    rollout), summary.json and report.md to ``out``; return the summary."""
    repeat, tolerance = int(facts["repeat"]), float(facts["tolerance"])
    split, unfinished = str(facts["split"]), facts.get("unfinished_reward")
    adapters = Adapters(make)
    try:
        _check(adapters.probe(), recording)
    except BaseException:
        adapters.close()
        raise
    todo: Iterator[Mapping[str, Any]] = iter(recording.rows)
    lock, done = threading.Lock(), list[dict[str, Any]]()

    def one(env: Any, recorded: Mapping[str, Any]) -> dict[str, Any]:
        why = compare.not_replayed(recorded)
        if why is not None:
            return compare.skipped(recorded, why)
        where = str(recorded.get("split") or split)
        replays: list[compare.Replayed] = []
        for _ in range(repeat):
            try:
                replays.append(once(env, recorded, where, unfinished))
            except Exception as exc:  # noqa: BLE001 - a bug in one replay is its row's verdict
                replays.append(compare.Replayed(None, "failed", f"orsgen: {exc!r}"))
        return compare.row(recorded, replays, tolerance)

    def worker() -> None:
        env = adapters.take()
        while True:
            with lock:
                recorded = next(todo, None)
            if recorded is None:
                return
            row = one(env, recorded)
            log.append([row])
            with lock:
                done.append(row)

    with writing(out):  # the run directory's owner: its lock, its appends, whole writes
        write_run(out, facts)
        log = Appender(out / RESULTS_FILE)
        started = time.monotonic()
        try:
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                workers = min(concurrency, len(recording.rows))
                for future in [pool.submit(worker) for _ in range(workers)]:
                    future.result()
        finally:
            log.close()
            adapters.close()
        summary = {**summarize(done, facts), "seconds": round(time.monotonic() - started, 3)}
        write_json(out / SUMMARY_FILE, summary)
        report(out, summary, done)
    return summary


def _check(probe: Any, recording: Recording) -> None:
    """The recorded tasks against the environment (one ``/num_tasks`` request per split),
    before the first rollout: a server that is not there, a split or task that is gone."""
    from orsgen.runtime import dataset

    here = probe.rollout.here
    wanted: dict[str, int] = {}
    for r in recording.rows:
        where = str(r.get("split") or recording.config.get("split"))
        wanted[where] = max(wanted.get(where, 0), int(r["task_index"]))
    for split, last in wanted.items():
        try:
            count = dataset.split_size(here.endpoint, split, timeout=here.open_timeout)
        except (ValueError, TypeError, LookupError, OrsRuntimeError) as exc:
            raise ReplayError(str(exc)) from exc
        if last >= count:
            raise ReplayError(f"the run has task {last} of split {split!r}, which has {count} now")


def factory(klass: type, adapter: Any) -> Callable[[], Any]:
    """What makes the replay's adapters: ``klass`` with the :class:`AdapterConfig` ``adapter``."""
    return functools.partial(klass, config=adapter)

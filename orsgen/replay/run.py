"""Replaying a recorded run: per recorded rollout, a session on the same task and the
recorded calls, in order, through the generated package's adapter (no model)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from orsgen.eval.conversation import Conversation
from orsgen.eval.workers import Adapters
from orsgen.jsonobject import as_object
from orsgen.replay import compare
from orsgen.replay.summary import report, summarize
from orsgen.runlog.open import Run, RunSpec, open_run
from orsgen.runlog.record import Rollout, RunError
from orsgen.runtime.errors import OrsRuntimeError, ToolCallFailure
from orsgen.runtime.records.passk import PASS_THRESHOLD
from orsgen.rundir import RESULTS_FILE, RUN_FILE, SUMMARY_FILE, read_json, run_rows, writing


@dataclass(frozen=True)
class Recording:
    """A recorded run: its settings as run.json names them, its rollouts as :mod:`compare`
    reads them (a trajectory's ``sample``: its place among its task's lines), its package."""

    run: Run
    config: Mapping[str, Any]
    rows: Sequence[Mapping[str, Any]]
    package: Path


def _settings(spec: RunSpec) -> Mapping[str, Any]:
    if spec.kind != "trajectory":
        return spec.raw
    threshold = PASS_THRESHOLD if spec.pass_threshold is None else spec.pass_threshold
    keep = {"split": spec.split, "adapter": spec.adapter, "pass_threshold": threshold}
    return {**keep, "unfinished_reward": spec.unfinished_reward}


def _row(rollout: Rollout, sample: int) -> dict[str, Any]:
    sent = [asdict(c) for c in rollout.env_calls if c.sent]  # as a replay sends them
    calls = sent if rollout.recorded_calls else None
    keys = ("task_index", "split", "reward", "verdict", "reason", "stop")
    return {**{k: getattr(rollout, k) for k in keys}, "sample": sample, "env_calls": calls}


def load(run: str | Path, package: str | None = None) -> Recording:
    """The recorded run ``run`` and its package (``package``, else the one it names)."""
    opened = open_run(run)
    seen: Counter[int] = Counter()
    found: list[dict[str, Any]] = []
    for r in opened.rows():
        found.append(_row(r, seen[r.task_index] if r.sample is None else r.sample))
        seen[r.task_index] += 1
    if not found:
        raise RunError(f"{run} holds no recorded rollout")
    if any(compare.calls_of(r) is None for r in found):
        raise RunError(
            f"{run} records no tool calls to replay (rows without env_calls: an older orsgen "
            "eval wrote it); evaluate again to record them"
        )
    where = Path(package) if package else opened.package
    if where is None:
        raise RunError(f"{run} names no package; give its directory with --package")
    if not (where / "adapter.py").is_file():
        hint = "" if package else "; it has moved: give its directory with --package"
        raise RunError(f"{where} is not a generated package (no adapter.py){hint}")
    return Recording(opened, _settings(opened.spec), found, where)


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
    ``concurrency`` at once, into the run directory ``out``; return the summary. An
    interrupted replay in ``out`` (of the same run, the same way) is continued.

    Interrupted (Ctrl-C, SIGTERM), the rollouts under way are abandoned with no row,
    summary.json covers the rows so far (``"interrupted": true``), and it raises again."""
    repeat, tolerance = int(facts["repeat"]), float(facts["tolerance"])
    split, unfinished = str(facts["split"]), facts.get("unfinished_reward")
    threshold = float(facts["pass_threshold"])
    adapters = Adapters(make)
    try:
        _check(adapters.probe(), recording)
    except BaseException:
        adapters.close()
        raise
    lock, stop, done = threading.Lock(), threading.Event(), list[dict[str, Any]]()
    todo: Iterator[Mapping[str, Any]] = iter(())

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
        return compare.row(recorded, replays, tolerance, threshold)

    def worker() -> None:
        env = adapters.take()
        while not stop.is_set():
            with lock:
                recorded = next(todo, None)
            if recorded is None:
                return
            row = one(env, recorded)
            if stop.is_set():
                return  # abandoned: no row
            log.append([row])
            with lock:
                done.append(row)

    def finish(**more: Any) -> dict[str, Any]:
        with lock:
            rows = list(done)
        seconds = round(time.monotonic() - started, 3)
        summary = {**summarize(rows, facts), "seconds": seconds, **more}
        writer.finish(summary, report, rows)
        return summary

    with writing(out) as writer:
        try:
            done += continued(out, facts)
        except BaseException:
            adapters.close()
            raise
        have = {_key(r) for r in done}
        left = [r for r in recording.rows if _key(r) not in have]
        todo = iter(left)
        writer.start(facts)
        log = writer.rows()
        started = time.monotonic()
        pool = ThreadPoolExecutor(max_workers=concurrency)
        try:
            for future in [pool.submit(worker) for _ in range(min(concurrency, len(left)))]:
                future.result()
        except BaseException:
            # No new replay starts; those under way are abandoned, with no row, their
            # adapters left open (closing one waits for its call in flight).
            stop.set()
            log.close()
            pool.shutdown(wait=False, cancel_futures=True)
            finish(interrupted=True)
            raise
        log.close()
        pool.shutdown()
        adapters.close()
        return finish()


def _key(row: Mapping[str, Any]) -> tuple[int, int]:
    return int(row["task_index"]), int(row["sample"])


# What an interrupted replay must share with this one to be continued.
SAME = ("kind", "recorded_run", "package", "repeat", "tolerance", "split", "environment")


def continued(out: Path, facts: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of the interrupted replay in ``out`` this one continues (none for no run)."""
    if not (out / RUN_FILE).exists() and not (out / RESULTS_FILE).exists():
        return []
    try:
        config = read_json(out / RUN_FILE)
        summary = read_json(out / SUMMARY_FILE) if (out / SUMMARY_FILE).exists() else {}
        found = [dict(r) for _, r in run_rows(out / RESULTS_FILE)]  # none for no file
    except RunError as exc:
        raise RunError(
            f"{out} already holds a run that is not a replay to continue ({exc}); use another --out"
        ) from None
    if config.get("kind") != "replay":
        raise RunError(f"{out} already holds a run; use another --out")
    if summary and not summary.get("interrupted"):
        raise RunError(f"{out} already holds a finished replay; use another --out")
    for name in SAME:
        if config.get(name) != facts.get(name):
            raise RunError(
                f"{out} holds an interrupted replay with another {name} ({config.get(name)!r}, "
                f"now {facts.get(name)!r}): continue it as it was started, or use another --out"
            )
    return found


def _check(probe: Any, recording: Recording) -> None:
    """The recorded tasks against the environment (one ``/num_tasks`` request per split)."""
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
            raise RunError(str(exc)) from exc
        if last >= count:
            raise RunError(f"the run has task {last} of split {split!r}, which has {count} now")

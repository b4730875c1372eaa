"""The rollouts of one evaluation on ``concurrency`` worker threads. Every (task, sample) gets
exactly one row, written as it completes; a failure is a row, never a stopped run.

Environments that judge groups (ORS ``score_group``) are evaluated as trained, by the rules
docs/evaluating.md states: a task's samples are judged together once the last finishes, on its
still-open session (``rollout.score_group``), and the group's rows are written together.
"""

from __future__ import annotations

import gc
import importlib
import itertools
import sys
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orsgen.eval.config import EvalConfig
from orsgen.eval.conversation import Conversation, Opened, Rollout, whole_prompt
from orsgen.eval.endpoints import EndpointsDown
from orsgen.eval.results import Records
from orsgen.eval.summary import passes
from orsgen.runtime.errors import describe
from orsgen.rundir import Appender, rows


class Adapters:
    """The adapters of a run: the probe, then the workers' (one each, two when sessions open
    ahead), all closed by :meth:`close` on every path."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._opened: list[Any] = []
        self._spare: list[Any] = []

    def probe(self) -> Any:
        """The first adapter: what the run is checked against, then a worker's."""
        env = self.take()
        self.kind: type = type(env)
        # Whether sessions open ahead: not under a rollout deadline, which counts from the
        # session's open and which a session opened ahead would spend waiting, nor under a
        # session cap, where it would hold a place (or wait for one, up to reconnect_for).
        deadline = getattr(env.rollout.settings, "rollout_timeout", None)
        self.ahead = deadline is None and getattr(env.rollout.here, "max_sessions", None) is None
        self._spare.append(env)  # before any worker starts
        return env

    def take(self) -> Any:
        """An adapter for a worker: the probe first, then new ones."""
        with self._lock:
            if self._spare:
                return self._spare.pop()
        env = self._make()
        with self._lock:
            self._opened.append(env)
        return env

    def close(self) -> None:
        """Close every adapter, even when one's close raises (raised once all are closed)."""
        with self._lock:
            opened, self._opened = self._opened, []
            self._spare = []
        with ExitStack() as closing:
            for env in opened:
                closing.callback(env.close)


@dataclass
class Plan:
    """What a run does (its config every field filled in), and what a resumed one did."""

    config: EvalConfig
    done: Records
    earlier: Mapping[str, Any]

    def __post_init__(self) -> None:
        self.tasks = self.config.tasks()
        self.have = {(r.task_index, r.sample) for r in self.done}

    def expected(self) -> dict[int, int]:
        """How many rollouts of each task are still to run."""
        have = Counter(task for task, _ in self.have)
        return {task: self.config.n - have[task] for task in self.tasks}


class Groups:
    """The rows of the groups still running, per task (``expected``: rollouts per task)."""

    def __init__(self, expected: Mapping[int, int]) -> None:
        self._expected = dict(expected)
        self._parked: dict[int, list[tuple[dict[str, Any], str]]] = {}
        self._lock = threading.Lock()

    def add(
        self, env: Any, task_index: int, row: dict[str, Any], answer: str | None
    ) -> list[dict[str, Any]]:
        """Park ``row``; when it completes its task's group, the group's judged rows."""
        with self._lock:
            parked = self._parked.setdefault(task_index, [])
            parked.append((row, answer or ""))
            if len(parked) < self._expected.get(task_index, 1):
                return []
            del self._parked[task_index]
        scores, why = _judge(env, [answer for _, answer in parked])
        for i, (judged, _) in enumerate(parked):
            score = scores[i] if scores is not None else None
            judged["group_reward"] = score
            if score is not None and judged["verdict"] == "unfinished":
                judged.update(reward=score, verdict="scored", reason=None)
            elif why is not None:
                judged["reason"] = why if not judged["reason"] else f"{judged['reason']}; {why}"
        return sorted((row for row, _ in parked), key=lambda r: int(r["sample"]))


def _judge(env: Any, answers: list[str]) -> tuple[list[float] | None, str | None]:
    """The group's scores, or ``None`` and why there are none."""
    try:
        scores = env.rollout.score_group(answers)
    except Exception as exc:  # noqa: BLE001 - no group score is a row that says why
        return None, f"group judge: {describe(exc)}"
    why = getattr(env.rollout, "group_error", None) or "no session to judge on"
    return scores, None if scores is not None else f"group judge: {why}"


class Prompts:
    """prompts.jsonl opened for appending: each task's prompt written once, before its first
    row; the tasks already there (a resumed run) are not written again."""

    def __init__(self, path: Path) -> None:
        self._seen = {int(row["task_index"]) for row in rows(path)}
        self._log = Appender(path)
        self._lock = threading.Lock()

    def add(self, task_index: int, split: str, prompt: Any) -> None:
        with self._lock:
            if task_index in self._seen:
                return
            self._seen.add(task_index)
        row = {"task_index": task_index, "split": split, "prompt": whole_prompt(prompt)}
        self._log.append([row])

    def close(self) -> None:
        self._log.close()


def _row(
    task_index: int, sample: int, split: str, r: Rollout, unfinished_reward: float | None
) -> dict[str, Any]:
    row: dict[str, Any] = {**vars(r), "task_index": task_index, "sample": sample, "split": split}
    del row["final_answer"]  # for the group judge only
    for key in ("seconds", "endpoint_seconds", "environment_seconds"):
        row[key] = round(row[key], 4)
    if r.verdict == "unfinished" and r.reward is None:
        row["reward"] = unfinished_reward
    return row


def run_all(
    plan: Plan,
    adapters: Adapters,
    conversation: Conversation,
    concurrency: int,
    show: bool,
    log: Appender | None,
    prompts: Prompts | None = None,
) -> None:
    """Run ``plan``'s pairs still to run, each row added to ``plan.done``. Interrupted
    (Ctrl-C, SIGTERM, a bug), it returns at once: the rollouts under way are abandoned, and
    ``log`` closed, so they get no row (a resumed run makes them)."""
    tqdm: Any = importlib.import_module("tqdm").tqdm  # tqdm ships no type information

    expected = plan.expected()
    total = sum(expected.values())
    pairs = (p for p in itertools.product(plan.tasks, range(plan.config.n)) if p not in plan.have)
    stop = threading.Event()
    lock = threading.Lock()
    split, threshold = str(plan.config.split), plan.config.pass_threshold or 0.0
    running = [0, 0, 0]  # rollouts, scored, passed: the progress bar's figures
    bar = tqdm(total=total, disable=not show or not total, unit="rollout", file=sys.stderr)
    judges = getattr(adapters.kind, "SUPPORTS_SCORE_GROUP", False)
    groups = Groups(expected) if judges else None

    def one(env: Any, task_index: int, sample: int, opened: Opened) -> None:
        try:
            rollout = conversation.run(env, task_index, split, sample, opened)
        except EndpointsDown:
            raise  # the run stops; this rollout gets no row, a resumed run makes it
        except Exception as exc:  # noqa: BLE001 - a bug in one rollout never stops the run
            unknown: dict[str, int | None] = {"prompt_tokens": None, "completion_tokens": None}
            rollout = Rollout(reason=f"orsgen: {type(exc).__name__}: {exc}", usage=unknown)
        row = _row(task_index, sample, split, rollout, plan.config.unfinished_reward)
        with lock:
            running[0] += 1
            running[1] += row["verdict"] == "scored"
            running[2] += passes(row, threshold)
            count, scored, passed = running
        shown = {"pass@1": f"{passed / count:.3f}", "coverage": f"{scored / count:.3f}"}
        bar.set_postfix(shown, refresh=False)
        bar.update(1)
        done = [row] if groups is None else groups.add(env, task_index, row, rollout.final_answer)
        if prompts is not None and opened.failure is None:
            prompts.add(task_index, split, opened.prompt)  # before the task's first row
        if log is not None and done:
            log.append(done)  # a group's rows in one write
        with lock:
            for finished in done:
                plan.done.add(finished)

    def taken() -> tuple[int, int] | None:
        with lock:
            return None if stop.is_set() else next(pairs, None)

    # Sessions open ahead: while a worker's rollout runs on one adapter, its other adapter
    # opens the session of the worker's next rollout, so that the open (three requests to
    # the environment's server) is off the critical path.
    opener = ThreadPoolExecutor(max_workers=concurrency) if adapters.ahead else None

    def worker() -> None:
        env = adapters.take()
        other = adapters.take() if opener is not None else None
        pair, opening = taken(), None
        while pair is not None and not stop.is_set():
            # The first, or each one with no opening ahead, opens now.
            opened = opening.result() if opening else conversation.open(env, pair[0], split)
            following, opening = taken(), None
            if following is not None and opener is not None and other is not None:
                opening = opener.submit(conversation.open, other, following[0], split)
            one(env, *pair, opened)
            pair = following
            if other is not None:
                env, other = other, env

    # The objects made before the rollouts (modules, classes: over half a million once
    # transformers is imported) are kept out of the cyclic collector's full passes for the
    # run: walking them holds the GIL, and so stops every rollout, for 0.1-0.3 s each time.
    freeze = gc.get_freeze_count() == 0  # unless the process froze its own already
    if freeze:
        gc.freeze()
    pool = ThreadPoolExecutor(max_workers=concurrency)
    ended = True
    try:
        for future in [pool.submit(worker) for _ in range(min(concurrency, max(1, total)))]:
            future.result()
    except BaseException:
        stop.set()  # no new rollout starts; those under way are abandoned, with no row
        ended = False
        if log is not None:
            log.close()
        raise
    finally:
        pool.shutdown(wait=ended, cancel_futures=True)
        if opener is not None:
            opener.shutdown(wait=ended, cancel_futures=True)
        if freeze:
            gc.unfreeze()
        bar.close()

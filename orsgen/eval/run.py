"""``evaluate``: run each task of a split ``n`` times against an OpenAI-compatible
endpoint, through a generated adapter, and write the run's files.

Rollouts run on ``concurrency`` worker threads, one adapter each (the runtime's session
pool, ``max_sessions`` and capacity handling apply as in training), which take the next
(task, sample) as they finish the last: memory does not grow with the number of
rollouts. Every (task, sample) gets exactly one row, written to results.jsonl as it
completes; a failure is a row, never a stopped run. The run keeps only each row's
:class:`~orsgen.eval.results.Record`; transcripts are read back from results.jsonl.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import re
import sys
import threading
import time
import urllib.parse
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orsgen.eval import report
from orsgen.eval.config import (
    ADAPTER_FIELDS,
    DEFAULT_MAX_TURNS,
    EvalConfig,
    EvalConfigError,
    adapter_identity,
)
from orsgen.eval.conversation import Conversation, Rollout, Sampling, Turns, tool_schemas, trl_tools
from orsgen.eval.groups import Groups
from orsgen.eval.results import Record, Records, ResultsLog, check_resume, read_records, write_json
from orsgen.eval.summary import passes, summarize
from orsgen.runtime.rundir import (
    ADAPTER_FILE,
    RESULTS_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    FinishedRun,
    rows,
)

__all__ = ["DEFAULT_MAX_TURNS", "EvalResult", "evaluate", "public_url"]


@dataclass(frozen=True)
class EvalResult(FinishedRun):
    """A finished evaluation: ``summary`` is summary.json (each task's ``pass_at_k`` and
    ``pass_hat_k`` read-only), ``config`` the run's identity (run.json), ``records`` one slim
    :class:`Record` per rollout, and ``seconds`` the wall time of this call's rollouts (setup
    and report excluded). The transcripts stay in ``out``'s results.jsonl:
    :meth:`transcripts` reads them back one at a time."""

    records: Sequence[Record]
    seconds: float = 0.0
    config: EvalConfig | None = None

    @property
    def rows(self) -> Sequence[Record]:
        """The records (each readable as a mapping, ``row["verdict"]``)."""
        return self.records

    @property
    def coverage(self) -> float:
        return float(self.summary["coverage"])

    @property
    def mean_reward(self) -> float | None:
        value = self.summary["mean_reward"]
        return None if value is None else float(value)

    @property
    def pass_at_k(self) -> dict[str, float]:
        return dict(self.summary["pass_at_k"])

    def transcripts(self) -> Iterator[dict[str, Any]]:
        """results.jsonl's rows, messages included, read one at a time."""
        if self.out is None:
            raise ValueError("this run kept no transcripts: pass out= to evaluate")
        return rows(self.out / RESULTS_FILE)

    def transcript(self, task_index: int, sample: int = 0) -> dict[str, Any] | None:
        """The row of (``task_index``, ``sample``), messages included, or ``None``."""
        for row in self.transcripts():
            if row["task_index"] == task_index and row["sample"] == sample:
                return row
        return None


def public_url(url: str) -> str:
    """``url`` without credentials or a query (never written as given)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


@dataclass
class _Progress:
    """The running figures on the progress bar."""

    threshold: float
    done: int = 0
    scored: int = 0
    passed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, row: dict[str, Any]) -> dict[str, str]:
        with self.lock:
            self.done += 1
            self.scored += row["verdict"] == "scored"
            self.passed += passes(row, self.threshold)
            return {
                "pass@1": f"{self.passed / self.done:.3f}",
                "coverage": f"{self.scored / self.done:.3f}",
            }


def _adapter_factory(
    env: type | Callable[[], Any], adapter_kwargs: dict[str, Any]
) -> Callable[[], Any]:
    if isinstance(env, type):
        return functools.partial(env, **adapter_kwargs)
    return env


# The keywords of evaluate's shorthand, each building the EvalConfig field it names.
SHORTHAND = {
    "endpoint": "endpoint",
    "model": "model",
    "split": "split",
    "samples": "n",
    "num_tasks": "num_tasks",
    "indices": "task_indices",
    "max_turns": "max_turns",
    "temperature": "temperature",
    "max_tokens": "max_tokens",
    "pass_threshold": "pass_threshold",
    "unfinished_reward": "unfinished_reward",
    "seed": "seed",
}


def _config_of(config: EvalConfig | None, keywords: dict[str, Any]) -> EvalConfig:
    """``config``, or the one the shorthand keywords build (never both)."""
    given = {k: keywords.pop(k) for k in list(keywords) if k in SHORTHAND}
    if config is not None:
        if given:
            names = ", ".join(f"{SHORTHAND[k]}=" for k in given)
            raise EvalConfigError(f"pass {names} in config, not as keywords of evaluate")
        return config
    return config_from_keywords(given)


def config_from_keywords(keywords: Mapping[str, Any]) -> EvalConfig:
    """The :class:`EvalConfig` of evaluate's shorthand keywords (``samples``, ``indices``,
    ...; ``orsgen eval``'s options have the same names), ``None`` meaning the default."""
    fields = {SHORTHAND[k]: v for k, v in keywords.items() if v is not None}
    missing = [k for k in ("endpoint", "model") if k not in fields]
    if missing:
        raise EvalConfigError(f"evaluate needs config=EvalConfig(...) or {'= and '.join(missing)}=")
    return EvalConfig(**fields)


def evaluate(
    env: type | Callable[[], Any],
    config: EvalConfig | None = None,
    *,
    concurrency: int = 1,
    rollout_timeout: float | None = None,
    request_timeout: float = 600.0,
    endpoint_api_key: str | None = None,
    out: str | Path | None = None,
    resume: bool = False,
    progress: bool = True,
    on_start: Callable[[EvalConfig], None] | None = None,
    **adapter_kwargs: Any,
) -> EvalResult:
    """Evaluate the model and endpoint of ``config`` (an OpenAI-compatible base URL such
    as ``http://127.0.0.1:8000/v1``) on its split of a generated adapter class ``env`` (or
    a factory returning adapters). ``EvalConfig``'s fields left ``None`` are filled in
    from the environment; the result is ``EvalResult.config`` and ``run.json``.

    The rest says how the run goes, not what it is: ``concurrency`` rollouts at once, each
    bounded by ``rollout_timeout`` seconds, ``endpoint_api_key`` (never written), results
    to ``out`` when given (``resume=True`` continues the run there). ``adapter_kwargs``
    (``base_url``, ``api_key``, ``secrets``, ...) go to the class. ``on_start(config)`` is
    called once the configuration is checked, before the first rollout.

    Shorthand: without ``config``, the keywords ``endpoint``, ``model``, ``split``,
    ``samples`` (``n``), ``num_tasks``, ``indices`` (``task_indices``), ``max_turns``,
    ``temperature``, ``max_tokens``, ``pass_threshold``, ``unfinished_reward`` and
    ``seed`` build it.

    Raises :class:`~orsgen.eval.EvalConfigError` (a ``ValueError``) for an unusable
    configuration, always before the first rollout; an error after that is raised as it
    is, with the rows written so far kept."""
    if "task_count" in adapter_kwargs:  # the split's size now comes from the environment
        adapter_kwargs.pop("task_count")
        warnings.warn("evaluate(task_count=) is ignored", DeprecationWarning, stacklevel=2)
    config = _config_of(config, adapter_kwargs)
    if concurrency < 1:
        raise EvalConfigError(f"concurrency must be at least 1, got {concurrency}")
    if rollout_timeout is not None:
        adapter_kwargs = {"rollout_timeout": rollout_timeout, **adapter_kwargs}
    make = _adapter_factory(env, {"prefetch": False, **adapter_kwargs})
    adapters = _Adapters(make)
    try:
        try:
            plan = _plan(adapters.probe(), config, Path(out) if out is not None else None, resume)
        except EvalConfigError:
            raise
        except (ValueError, TypeError, LookupError) as exc:
            raise EvalConfigError(str(exc)) from exc
        except Exception as exc:
            from orsgen.runtime.errors import OrsRuntimeError

            if isinstance(exc, OrsRuntimeError):  # no such split, no server there
                raise EvalConfigError(str(exc)) from exc
            raise
        if on_start is not None:
            on_start(plan.config)
        conversation = _conversation(
            plan, config.endpoint, endpoint_api_key, request_timeout, rollout_timeout
        )
        log = ResultsLog(plan.out / RESULTS_FILE) if plan.out is not None else None
        started = time.monotonic()
        try:
            _run_all(plan, adapters, conversation, concurrency, progress, log)
        finally:
            if log is not None:
                log.close()
        seconds = time.monotonic() - started
    finally:
        adapters.close()
    records = plan.done  # the resumed rows' records, and the new ones
    summary = summarize(records, plan.config.to_json(), records.tools)
    if plan.out is not None:
        write_json(plan.out / SUMMARY_FILE, summary)
        report.write(plan.out, summary, records)
    return EvalResult(summary, plan.out, records, seconds, plan.config)


@dataclass
class _Plan:
    """What a run does: its config (every field filled in: ``split``, ``tasks`` and
    ``threshold`` are its own), its output directory, the records it already has
    (resumed) and the (task, sample) pairs still to run."""

    config: EvalConfig
    split: str
    tasks: tuple[int, ...]
    threshold: float
    out: Path | None
    done: Records
    have: set[tuple[int, int]]

    def todo(self) -> Iterator[tuple[int, int]]:
        for task in self.tasks:
            for sample in range(self.config.n):
                if (task, sample) not in self.have:
                    yield task, sample

    def expected(self) -> dict[int, int]:
        """How many rollouts of each task are still to run."""
        n = self.config.n
        counts = {task: n for task in self.tasks}
        for task, _ in self.have:
            if task in counts:
                counts[task] -= 1
        return counts


def _plan(probe: Any, given: EvalConfig, out: Path | None, resume: bool) -> _Plan:
    """Everything checked before the first rollout (one ``/num_tasks`` request): ``given``
    with the fields that come from the environment filled in."""
    from orsgen.runtime import dataset
    from orsgen.runtime.choosing import tasks

    here = probe.rollout.here
    kind: type = probe.__class__
    ours = adapter_identity(kind)
    for name in ADAPTER_FIELDS:
        if getattr(given, name) is not None and getattr(given, name) != ours[name]:
            raise EvalConfigError(
                f"config.{name} is {getattr(given, name)!r} but the adapter's is {ours[name]!r}"
            )
    split = str(given.split or here.split)
    count = dataset.split_size(here.endpoint, split, timeout=here.open_timeout)
    try:  # the one place that restricts tasks, with its range check
        chosen = tasks.candidates(count, given.num_tasks, given.task_indices)
    except ValueError as exc:
        raise EvalConfigError(re.sub(r"^indices\b", "task_indices", str(exc))) from None
    threshold = _threshold(probe, given.pass_threshold)
    config = dataclasses.replace(
        given,
        endpoint=public_url(given.endpoint),
        split=split,
        num_tasks=None,
        task_indices=tuple(dict.fromkeys(chosen)),
        pass_threshold=threshold,
        **ours,
    )
    done = Records()
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        check_resume(out, config, resume)
        write_json(out / RUN_FILE, config.to_json())
        # In the tools' own key order: the model saw them rendered in it.
        write_json(out / ADAPTER_FILE, _adapter_view(kind, probe), sort_keys=False)
        done = read_records(out / RESULTS_FILE)
    indices = config.task_indices or ()
    return _Plan(
        config, split, indices, threshold, out, done, {(r.task_index, r.sample) for r in done}
    )


def _adapter_view(klass: Any, probe: Any) -> dict[str, Any]:
    """What the adapter showed the model (its tools, as TRL renders them) and the split the
    package trains on: ``orsgen sft`` builds its rows' ``tools`` from it and guards
    held-out splits with it."""
    return {
        "adapter": klass.__qualname__,
        "environment": klass.ENV_NAME,
        "tools_sha256": klass.TOOLS_SHA256,
        "train_split": klass.DEFAULT_SPLIT,
        "tools": tool_schemas(trl_tools(probe)),
    }


def _threshold(probe: Any, given: float | None) -> float:
    """``given``, else the adapter's pass threshold (the package default)."""
    if given is not None:
        return float(given)
    from orsgen.runtime import passk

    setting = getattr(probe.rollout, "pass_threshold", None)  # the adapter's pass_threshold=
    return float(setting if setting is not None else passk.PASS_THRESHOLD)


def _conversation(
    plan: _Plan,
    endpoint: str,
    key: str | None,
    request_timeout: float,
    rollout_timeout: float | None,
) -> Conversation:
    import openai

    client = openai.OpenAI(
        base_url=endpoint, api_key=key or "EMPTY", timeout=request_timeout, max_retries=3
    )
    config = plan.config
    return Conversation(
        client,
        config.endpoint,
        Sampling(config.model, config.temperature, config.max_tokens, config.seed),
        Turns(config.max_turns, rollout_timeout),
    )


class _Adapters:
    """The adapters of a run: the probe (made for the configuration, then the first
    worker's), one per worker thread, all closed by :meth:`close` on every path."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._opened: list[Any] = []
        self._spare: list[Any] = []
        self._local = threading.local()

    def probe(self) -> Any:
        env = self._make()
        self.kind: type = type(env)
        with self._lock:
            self._opened.append(env)
            self._spare.append(env)
        return env

    def mine(self) -> Any:
        """This worker thread's adapter (the probe goes to the first thread that asks)."""
        env = getattr(self._local, "env", None)
        if env is None:
            with self._lock:
                env = self._spare.pop() if self._spare else None
            if env is None:
                env = self._make()
                with self._lock:
                    self._opened.append(env)
            self._local.env = env
        return env

    def close(self) -> None:
        """Close every adapter, even when one's close raises (the first error is raised
        once all are closed)."""
        with self._lock:
            opened, self._opened = self._opened, []
            self._spare = []
        failed: BaseException | None = None
        for env in opened:
            try:
                env.close()
            except BaseException as exc:  # noqa: BLE001 - the others still close
                failed = failed or exc
        if failed is not None:
            raise failed


def _row(
    task_index: int, sample: int, split: str, r: Rollout, unfinished_reward: float | None
) -> dict[str, Any]:
    reward = r.reward
    if r.verdict == "unfinished" and reward is None:
        reward = unfinished_reward
    return {
        "task_index": task_index,
        "sample": sample,
        "split": split,
        "reward": reward,
        "verdict": r.verdict,
        "reason": r.reason,
        "calls": r.calls,
        "turns": r.turns,
        "seconds": round(r.seconds, 4),
        "endpoint_seconds": round(r.endpoint_seconds, 4),
        "environment_seconds": round(r.environment_seconds, 4),
        "messages": r.messages,
        "tool_calls": r.tool_calls,
    }


def _run_all(
    plan: _Plan,
    adapters: _Adapters,
    conversation: Conversation,
    concurrency: int,
    show: bool,
    log: ResultsLog | None,
) -> None:
    """Run the plan's (task, sample) pairs, each row added to ``plan.done``."""
    tqdm: Any = importlib.import_module("tqdm").tqdm  # tqdm ships no type information

    config = plan.config
    expected = plan.expected()
    total = sum(expected.values())
    pairs = plan.todo()
    take = threading.Lock()
    stop = threading.Event()
    lock = threading.Lock()
    records = plan.done
    running = _Progress(plan.threshold)
    bar = tqdm(total=total, disable=not show, unit="rollout", file=sys.stderr)
    judges = getattr(adapters.kind, "SUPPORTS_SCORE_GROUP", False)
    groups = Groups(expected) if judges else None

    def one(task_index: int, sample: int) -> None:
        env = None
        try:
            env = adapters.mine()
            rollout = conversation.run(env, task_index, plan.split, sample)
        except Exception as exc:  # noqa: BLE001 - a bug in one rollout never stops the run
            rollout = Rollout(reason=f"orsgen: {type(exc).__name__}: {exc}")
        row = _row(task_index, sample, plan.split, rollout, config.unfinished_reward)
        bar.set_postfix(running.add(row), refresh=False)
        bar.update(1)
        done = [row] if groups is None else groups.add(env, task_index, row, rollout.final_answer)
        for finished in done:
            if log is not None:
                log.append(finished)
            with lock:
                records.add(finished)

    def worker() -> None:
        while not stop.is_set():
            with take:
                pair = next(pairs, None)
            if pair is None:
                return
            one(*pair)

    pool = ThreadPoolExecutor(max_workers=concurrency)
    try:
        workers = [pool.submit(worker) for _ in range(min(concurrency, max(1, total)))]
        for future in workers:
            future.result()
    except BaseException:
        # Ctrl-C or a bug: no new rollout starts; those under way finish and write rows.
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True)
        bar.close()

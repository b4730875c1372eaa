"""``evaluate``: run each task of a split ``n`` times against an OpenAI-compatible
endpoint, through a generated adapter, and write the run's files.

Rollouts run on a thread pool, one adapter per worker thread (the runtime's session pool,
``max_sessions`` and capacity handling apply as in training). Every (task, sample) gets
exactly one row; a failure is a row, never a stopped run.
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orsgen.eval import report
from orsgen.eval.conversation import Conversation, Rollout, Sampling, Turns, tool_schemas, trl_tools
from orsgen.eval.groups import Groups
from orsgen.eval.results import (
    ADAPTER_FILE,
    RESULTS_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    ResultsLog,
    check_resume,
    read_rows,
    write_json,
)
from orsgen.eval.summary import passes, summarize

DEFAULT_MAX_TURNS = 8


@dataclass(frozen=True)
class EvalResult:
    """A finished evaluation: ``summary`` is summary.json, ``rows`` results.jsonl, and
    ``seconds`` the wall time of this call's rollouts (setup and report excluded)."""

    summary: dict[str, Any]
    rows: list[dict[str, Any]]
    out: Path | None
    seconds: float = 0.0

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


def evaluate(
    env: type | Callable[[], Any],
    *,
    endpoint: str,
    model: str,
    split: str | None = None,
    samples: int = 1,
    num_tasks: int | None = None,
    indices: Sequence[int] | None = None,
    concurrency: int = 1,
    max_turns: int = DEFAULT_MAX_TURNS,
    temperature: float | None = None,
    max_tokens: int | None = None,
    pass_threshold: float = 1.0,
    unfinished_reward: float | None = None,
    seed: int | None = None,
    rollout_timeout: float | None = None,
    request_timeout: float = 600.0,
    endpoint_api_key: str | None = None,
    out: str | Path | None = None,
    resume: bool = False,
    progress: bool = True,
    task_count: int | None = None,
    **adapter_kwargs: Any,
) -> EvalResult:
    """Evaluate ``model`` behind ``endpoint`` (an OpenAI-compatible base URL such as
    ``http://127.0.0.1:8000/v1``) on ``split`` of a generated adapter class ``env`` (or a
    factory returning adapters). ``adapter_kwargs`` (``base_url``, ``api_key``,
    ``secrets``, ...) go to the class. Results go to ``out`` when given.

    Raises ``ValueError`` / ``RunFileError`` for an unusable configuration."""
    import openai

    if samples < 1 or concurrency < 1 or max_turns < 1:
        raise ValueError("samples, concurrency and max_turns must be at least 1")
    if num_tasks is not None and indices is not None:
        raise ValueError("give num_tasks or indices, not both")
    if rollout_timeout is not None:
        adapter_kwargs = {"rollout_timeout": rollout_timeout, **adapter_kwargs}
    make = _adapter_factory(env, {"prefetch": False, **adapter_kwargs})
    probe: Any = make()
    klass: Any = probe.__class__
    split = str(split or klass.DEFAULT_SPLIT)
    chosen = _task_indices(indices, num_tasks, task_count)
    label = public_url(endpoint)
    config: dict[str, Any] = {
        "model": model,
        "endpoint": label,
        "environment": klass.ENV_NAME,
        "adapter": klass.__qualname__,  # not the module: it depends on the import path
        "adapter_version": _package_version(klass),
        "tools_sha256": klass.TOOLS_SHA256,
        "split": split,
        "n": samples,
        "task_indices": chosen,
        "max_turns": max_turns,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "seed": seed,
        "pass_threshold": pass_threshold,
        "unfinished_reward": unfinished_reward,
    }
    out_dir = Path(out) if out is not None else None
    done: list[dict[str, Any]] = []
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        check_resume(out_dir, config, resume)
        write_json(out_dir / RUN_FILE, config)
        # In the tools' own key order: the model saw them rendered in it.
        write_json(out_dir / ADAPTER_FILE, _adapter_view(klass, probe), sort_keys=False)
        done = read_rows(out_dir / RESULTS_FILE)
    have = {(int(r["task_index"]), int(r["sample"])) for r in done}
    todo = [(i, s) for i in chosen for s in range(samples) if (i, s) not in have]
    client = openai.OpenAI(
        base_url=endpoint,
        api_key=endpoint_api_key or "EMPTY",
        timeout=request_timeout,
        max_retries=3,
    )
    conversation = Conversation(
        client,
        label,
        Sampling(model, temperature, max_tokens, seed),
        Turns(max_turns, rollout_timeout),
    )
    log = ResultsLog(out_dir / RESULTS_FILE) if out_dir is not None else None
    started = time.monotonic()
    new_rows = _run_all(
        todo,
        make,
        probe,
        conversation,
        split,
        unfinished_reward,
        log,
        progress,
        pass_threshold,
        concurrency,
    )
    seconds = time.monotonic() - started
    if log is not None:
        log.close()
    rows = done + new_rows
    summary = summarize(rows, config)
    if out_dir is not None:
        write_json(out_dir / SUMMARY_FILE, summary)
        report.write(out_dir, summary, rows)
    return EvalResult(summary, rows, out_dir, seconds)


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


def _task_indices(
    indices: Sequence[int] | None, num_tasks: int | None, task_count: int | None
) -> list[int]:
    if indices is not None:
        return list(dict.fromkeys(int(i) for i in indices))
    if task_count is None:
        raise ValueError("evaluate needs indices= or the split's task_count=")
    return list(range(task_count if num_tasks is None else min(num_tasks, task_count)))


def _package_version(klass: type) -> str | None:
    package = klass.__module__.rpartition(".")[0]
    module = sys.modules.get(f"{package}.version") or sys.modules.get(package)
    return getattr(module, "__version__", None)


def _run_all(
    todo: list[tuple[int, int]],
    make: Callable[[], Any],
    probe: Any,
    conversation: Conversation,
    split: str,
    unfinished_reward: float | None,
    log: ResultsLog | None,
    show: bool,
    threshold: float,
    concurrency: int,
) -> list[dict[str, Any]]:
    tqdm: Any = importlib.import_module("tqdm").tqdm  # tqdm ships no type information

    local = threading.local()
    opened: list[Any] = [probe]
    spare = [probe]  # the adapter made for the configuration serves the first worker
    lock = threading.Lock()

    def adapter() -> Any:
        """This worker thread's adapter (the probe goes to the first thread that asks)."""
        env = getattr(local, "env", None)
        if env is None:
            with lock:
                env = spare.pop() if spare else None
            if env is None:
                env = make()
                with lock:
                    opened.append(env)
            local.env = env
        return env

    running = _Progress(threshold)
    rows: list[dict[str, Any]] = []
    bar = tqdm(total=len(todo), disable=not show, unit="rollout", file=sys.stderr)

    groups = Groups(todo) if getattr(probe, "SUPPORTS_SCORE_GROUP", False) else None

    def one(task_index: int, sample: int) -> None:
        env = None
        try:
            env = adapter()
            rollout = conversation.run(env, task_index, split, sample)
        except Exception as exc:  # noqa: BLE001 - a bug in one rollout never stops the run
            rollout = Rollout(reason=f"orsgen: {type(exc).__name__}: {exc}")
        row = _row(task_index, sample, split, rollout, unfinished_reward)
        bar.set_postfix(running.add(row), refresh=False)
        bar.update(1)
        done = [row] if groups is None else groups.add(env, task_index, row, rollout.final_answer)
        for finished in done:
            if log is not None:
                log.append(finished)
            with lock:
                rows.append(finished)

    pool = ThreadPoolExecutor(max_workers=concurrency)
    try:
        for future in [pool.submit(one, i, s) for i, s in todo]:
            future.result()
    except BaseException:
        # Ctrl-C: no new rollout starts; those under way finish and write their rows.
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
        bar.close()
        for env in opened:
            env.close()
    return rows


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
    }

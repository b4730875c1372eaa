"""TRL's AsyncGRPO rollout loop in a spawned child started exactly as
``AsyncRolloutWorker.start()`` starts it (``async_rollout_worker.py``), against the
stand-in generation server (tests/standin_vllm.py), until it produced enough samples."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import pickle
import queue
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import pytest


def _drain(q: Any, into: list[Any] | None = None) -> None:
    while True:
        try:
            item = q.get_nowait()
        except (queue.Empty, OSError, ValueError):
            return
        if into is not None:
            into.append(item)


@dataclass
class Rollouts:
    """What one run of the child produced."""

    samples: list[Any] = field(default_factory=lambda: [])
    metrics: list[dict[str, Any]] = field(default_factory=lambda: [])  # every pushed window
    generator_counts: dict[str, int] = field(default_factory=lambda: {})


def run_rollouts(
    environment_factory: Any,
    tokenizer: Any,
    num_generations: int,
    max_inflight: int,
    wanted: int,
    timeout: float = 180.0,
    dataset: Any = None,
    around_start: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
    each_poll: Callable[[int], object] | None = None,
) -> Rollouts:
    """At least ``wanted`` samples of the loop on ``dataset`` (default: the placeholder
    rows of ``train_dataset=None``), and every metrics window the child pushed. The child
    runs inside ``around_start()`` and is stopped (by its PID) on return. ``each_poll`` is
    called with the number of samples so far after every poll of the rollout queue, while
    the child runs (as a trainer's steps would consume them)."""
    from datasets import Dataset  # type: ignore[import-untyped]
    from standin_vllm import StandinVLLM
    from trl.experimental.async_grpo.async_rollout_worker import _AsyncRolloutLoop, _child_main

    if dataset is None:  # what AsyncGRPOTrainer builds when train_dataset is None
        dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": ""}]] * 2})
    process: Any = None
    out = Rollouts()
    samples, pushed = out.samples, out.metrics
    try:
        with StandinVLLM(tokenizer) as generator:
            ctx = mp.get_context("spawn")
            rollout_buffer = ctx.Queue(maxsize=4 * wanted)
            model_version_value = ctx.Value("i", 0)
            stop_event = ctx.Event()
            child_ready_event = ctx.Event()
            heartbeat_value = ctx.Value("d", 0.0)
            failed_event = ctx.Event()
            exception_info_queue = ctx.Queue(maxsize=1)
            metrics_queue = ctx.Queue(maxsize=4096)
            loop_kwargs: dict[str, Any] = dict(
                model_name=generator.model_name,
                lora_name=None,
                dataset=dataset,
                reward_funcs=[],
                processing_class=tokenizer,
                eos_token_ids=[tokenizer.eos_token_id],
                tools=None,
                environment_factory=environment_factory,
                num_generations=num_generations,
                max_inflight_tasks=max_inflight,
                queue_maxsize=4 * wanted,
                vllm_server_url=generator.url,
                max_tokens=64,
                temperature=1.0,
                request_timeout=60,
                max_tool_calling_iterations=2,
                log_completions=False,
                dataset_start_index=0,
            )
            pickle.dumps(loop_kwargs)  # AsyncRolloutWorker.start()'s up-front check
            process = ctx.Process(
                target=_child_main,
                args=(
                    _AsyncRolloutLoop,
                    loop_kwargs,
                    rollout_buffer,
                    model_version_value,
                    stop_event,
                    child_ready_event,
                    heartbeat_value,
                    failed_event,
                    exception_info_queue,
                    metrics_queue,
                ),
                name="grpo-rollout-worker-child",
                daemon=True,
            )
            heartbeat_value.value = time.time()

            def child_failure() -> str:
                try:
                    name, message, tb = exception_info_queue.get(timeout=5)
                    return f"rollout child failed: {name}: {message}\n{tb}"
                except queue.Empty:
                    return f"rollout child failed (exitcode={process.exitcode}), no exception info"

            with around_start():
                process.start()
                deadline = time.monotonic() + timeout
                while not child_ready_event.wait(timeout=1.0):
                    assert process.is_alive(), f"child exited during init ({process.exitcode})"
                    assert time.monotonic() < deadline, "child did not signal ready"
                while len(samples) < wanted:
                    if failed_event.is_set() or not process.is_alive():
                        pytest.fail(child_failure())
                    assert time.monotonic() < deadline, f"only {len(samples)} samples in time"
                    try:
                        samples.append(rollout_buffer.get(timeout=0.2))
                    except queue.Empty:
                        pass
                    _drain(metrics_queue, pushed)
                    if each_poll is not None:
                        each_poll(len(samples))
                # Stop as AsyncRolloutWorker.stop() does: the stop event, then join; keep
                # draining so the child's queue feeder threads can flush and exit.
                stop_event.set()
                stop_deadline = time.monotonic() + 30
                while process.is_alive() and time.monotonic() < stop_deadline:
                    _drain(rollout_buffer)
                    _drain(metrics_queue, pushed)
                    process.join(timeout=0.1)
                exit_code = process.exitcode
                assert exit_code == 0, child_failure() if failed_event.is_set() else exit_code
                assert not failed_event.is_set(), child_failure()
            out.generator_counts = dict(generator.counts)
    finally:
        if process is not None and process.pid is not None and process.is_alive():
            process.terminate()  # this harness's own child, by its PID
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join(timeout=10)
    return out

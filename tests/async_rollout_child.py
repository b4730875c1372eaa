"""TRL's AsyncGRPO rollout loop on a CPU, in a child started exactly as
``AsyncRolloutWorker.start()`` starts it (``trl/experimental/async_grpo/async_rollout_worker.py``).

``AsyncRolloutWorker`` refuses to start without vLLM, but all it does is spawn a child
running ``_AsyncRolloutLoop`` (through ``_child_main``), and that loop only talks to vLLM
over HTTP (``POST /v1/completions``). :func:`run_rollout_child` starts the child with the
same ``spawn`` context, shared queues, values and events, ``_child_main`` arguments and
up-front pickle check, against a stand-in generation server (tests/standin_vllm.py, the only
stand-in: the adapter, the openreward SDK and TRL's loop are unmodified). It collects the
scored samples and the metrics the child pushes, then stops the child as
``AsyncRolloutWorker.stop()`` does. Used by tests/test_e2e_async_rollout_worker.py and
tests/test_e2e_async_trust.py.
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

# The child's start-up (it imports torch and TRL) plus the samples wanted.
RUN_WAIT = 180.0
STOP_WAIT = 30.0


@dataclass
class RolloutRun:
    """What the child sent back: its ``RolloutSample``s, and the metrics it pushed to the
    queue the trainer's ``log()`` drains."""

    samples: list[Any] = field(default_factory=list[Any])
    metrics: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])


def _drain(q: Any, into: list[Any] | None = None) -> None:
    while True:
        try:
            item = q.get_nowait()
        except (queue.Empty, OSError, ValueError):
            return
        if into is not None:
            into.append(item)


def run_rollout_child(
    generator: Any,
    tokenizer: Any,
    *,
    dataset: Any,
    environment_factory: Callable[[], Any],
    num_generations: int,
    max_inflight: int,
    samples_wanted: int,
) -> RolloutRun:
    """Run the rollout child until it has sent ``samples_wanted`` samples, then stop it;
    fails the test if the child fails, exits or runs out of time."""
    from trl.experimental.async_grpo.async_rollout_worker import _AsyncRolloutLoop, _child_main

    # What AsyncRolloutWorker.__init__ builds, from an mp 'spawn' context.
    ctx = mp.get_context("spawn")
    queue_maxsize = 4 * samples_wanted
    rollout_buffer = ctx.Queue(maxsize=queue_maxsize)
    model_version_value = ctx.Value("i", 0)
    stop_event = ctx.Event()
    child_ready_event = ctx.Event()
    heartbeat_value = ctx.Value("d", 0.0)
    failed_event = ctx.Event()
    exception_info_queue = ctx.Queue(maxsize=1)
    metrics_queue = ctx.Queue(maxsize=4096)
    # The kwargs AsyncGRPOTrainer forwards (async_grpo_trainer.py), with the two
    # AsyncRolloutWorker.__init__ adds (queue_maxsize, dataset_start_index).
    loop_kwargs: dict[str, Any] = dict(
        model_name=generator.model_name,
        lora_name=None,
        dataset=dataset,
        reward_funcs=[],  # the environment owns the reward (get_reward, Scored<Env>)
        processing_class=tokenizer,
        eos_token_ids=[tokenizer.eos_token_id],
        tools=None,
        environment_factory=environment_factory,
        num_generations=num_generations,
        max_inflight_tasks=max_inflight,
        queue_maxsize=queue_maxsize,
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

    run = RolloutRun()
    try:
        process.start()
        deadline = time.monotonic() + RUN_WAIT
        while not child_ready_event.wait(timeout=1.0):
            assert process.is_alive(), f"child exited during init ({process.exitcode})"
            assert time.monotonic() < deadline, "child did not signal ready"
        while len(run.samples) < samples_wanted:
            if failed_event.is_set() or not process.is_alive():
                pytest.fail(child_failure())
            assert time.monotonic() < deadline, f"only {len(run.samples)} samples in time"
            try:
                run.samples.append(rollout_buffer.get(timeout=0.2))
            except queue.Empty:
                pass
            _drain(metrics_queue, run.metrics)
        # Stop as AsyncRolloutWorker.stop() does: the stop event, then join; keep draining
        # so the child's queue feeder threads can flush and exit.
        stop_event.set()
        stop_deadline = time.monotonic() + STOP_WAIT
        while process.is_alive() and time.monotonic() < stop_deadline:
            _drain(rollout_buffer)
            _drain(metrics_queue, run.metrics)
            process.join(timeout=0.1)
        assert process.exitcode == 0, child_failure() if failed_event.is_set() else process.exitcode
        assert not failed_event.is_set(), child_failure()
    finally:
        if process.pid is not None and process.is_alive():
            process.terminate()  # this test's own child, by its PID
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join(timeout=10)
    return run

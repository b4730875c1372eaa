"""TRL's AsyncGRPO rollout loop with environment-owned data on trustenv (grader crash on
task 1, broken calls on task 4), in a spawned child started exactly as
``AsyncRolloutWorker.start()`` does (see tests/test_e2e_async_rollout_worker.py for the
harness and why the stand-in generation server is the only stand-in).

- Task choice: the placeholder rows AsyncGRPOTrainer builds for ``train_dataset=None``
  (``async_grpo_trainer.py`` around line 1222) carry no task; the worker awaits each
  ``reset`` in turn, a group's ``num_generations`` rows in a row (``async_rollout_worker.py``
  around lines 549-583 and 878-887), and the adapter reads ``num_generations`` from the
  child's start arguments: every group on one task, at least 5 distinct tasks.
- Failures: a raised tool call is counted as ``tools/echo/failure_total`` (around line 987).
- Health: ``get_reward()`` sends ``ors/*`` (num, den) rates to the worker's metrics queue,
  the queue the trainer's ``log()`` drains into ``trainer.state.log_history`` (around line
  1698); reduced with TRL's own ``_reduce_metric`` they give the coverage the samples show.
"""

from __future__ import annotations

import functools
import multiprocessing as mp
import pickle
import queue
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import ors_server

pytest.importorskip("trl")
pytest.importorskip("tokenizers")
pytest.importorskip("aiohttp")

import tiny_model  # noqa: E402  (examples/, on sys.path via conftest)

from envs.trust_support import TRUST_ENV, ScoredTrustAdapter, TrustAdapter  # noqa: E402

WORDS = ["apple", "banana", "cherry", "damson", "elder", "fig"]
BROKEN = {"banana", "elder"}
NUM_GENERATIONS = 2
MAX_INFLIGHT = 4
GROUPS_WANTED = 6
WORD = re.compile(r"Call echo with the word '([^']+)'")


def _drain(q: Any, into: list[Any] | None = None) -> None:
    while True:
        try:
            item = q.get_nowait()
        except (queue.Empty, OSError, ValueError):
            return
        if into is not None:
            into.append(item)


@pytest.mark.timeout(300)
def test_async_rollout_loop_with_environment_owned_data(
    ors_servers: ors_server.Servers, tmp_path: Path
) -> None:
    from datasets import Dataset  # type: ignore[import-untyped]
    from standin_vllm import StandinVLLM
    from trl.experimental.async_grpo.async_grpo_trainer import _reduce_metric
    from trl.experimental.async_grpo.async_rollout_worker import _AsyncRolloutLoop, _child_main

    server = ors_servers.own(TRUST_ENV)
    process: Any = None
    try:
        probe = TrustAdapter(base_url=server.url)
        episodes = [
            tiny_model.Episode(f"Call echo with the word {w!r}.", {"text": w}, f"echo: {w}")
            for w in WORDS
        ]
        tokenizer = tiny_model.build_tokenizer(
            tiny_model._render_corpus([probe.echo, probe.hint], episodes, "echo")
        )
        # What AsyncGRPOTrainer builds when train_dataset is None.
        placeholder = Dataset.from_dict({"prompt": [[{"role": "user", "content": ""}]] * 2})
        with StandinVLLM(tokenizer) as generator:
            ctx = mp.get_context("spawn")
            wanted = GROUPS_WANTED * NUM_GENERATIONS
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
                dataset=placeholder,
                reward_funcs=[],
                processing_class=tokenizer,
                eos_token_ids=[tokenizer.eos_token_id],
                tools=None,
                environment_factory=functools.partial(ScoredTrustAdapter, base_url=server.url),
                num_generations=NUM_GENERATIONS,
                max_inflight_tasks=MAX_INFLIGHT,
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
            samples: list[Any] = []
            pushed: list[dict[str, Any]] = []
            process.start()
            deadline = time.monotonic() + 180
            while not child_ready_event.wait(timeout=1.0):
                assert process.is_alive(), f"child exited during init ({process.exitcode})"
                assert time.monotonic() < deadline
            while len(samples) < wanted:
                if failed_event.is_set() or not process.is_alive():
                    name, message, tb = exception_info_queue.get(timeout=5)
                    pytest.fail(f"rollout child failed: {name}: {message}\n{tb}")
                assert time.monotonic() < deadline, f"only {len(samples)} samples in time"
                try:
                    samples.append(rollout_buffer.get(timeout=0.2))
                except queue.Empty:
                    pass
                _drain(metrics_queue, pushed)
            stop_event.set()
            stop_deadline = time.monotonic() + 30
            while process.is_alive() and time.monotonic() < stop_deadline:
                _drain(rollout_buffer)
                _drain(metrics_queue, pushed)
                process.join(timeout=0.1)
            assert process.exitcode == 0
    finally:
        if process is not None and process.pid is not None and process.is_alive():
            process.terminate()  # this test's own child, by its PID
            process.join(timeout=10)
        server.stop()

    # Every group on one task, and the tasks vary.
    groups: dict[int, list[str]] = defaultdict(list)
    for sample in samples:
        groups[sample.group_id].append(WORD.findall(sample.prompt[-1]["content"])[-1])
    whole = {g: words for g, words in groups.items() if len(words) == NUM_GENERATIONS}
    assert len(whole) >= GROUPS_WANTED - 1, groups
    assert all(len(set(words)) == 1 for words in groups.values()), groups
    sequence = [groups[g][0] for g in sorted(groups)]
    assert len(set(sequence)) >= 5, sequence
    print(f"\nasync task sequence by group: {sequence}")

    # TRL counted the broken calls; the model read orsgen's text.
    failures = sum(m.get("tools/echo/failure_total", 0) for m in pushed)
    broken = [s for s in samples if groups[s.group_id][0] in BROKEN]
    assert broken and failures >= len(broken), (failures, len(broken))
    for sample in broken:
        assert sample.completion[1]["content"].startswith(
            "{'error': \"tool 'echo' failed in the environment (tool_raised): "
        ), sample.completion

    # The ors/* rates reached the queue the trainer's log() drains, and reduce (with TRL's
    # own reduction) to the coverage of the rollouts the child ran.
    ors = [m for m in pushed if "ors/scored_frac" in m]
    assert ors, "no ors/* metrics reached the worker's metrics queue"
    scored_frac = _reduce_metric("ors/scored_frac", [m["ors/scored_frac"] for m in ors])
    rollouts = sum(m["ors/scored_frac"][1] for m in ors)
    assert rollouts >= len(samples)
    assert 0 < scored_frac < 1, scored_frac
    env_errors = _reduce_metric("ors/env_error_frac", [m["ors/env_error_frac"] for m in ors])
    assert env_errors > 0
    sample_frac = sum(1 for s in samples if s.metrics["rewards/ScoredTrustAdapter"] == 1.0) / len(
        samples
    )
    assert abs(scored_frac - sample_frac) <= 0.25, (scored_frac, sample_frac)
    print(
        f"async ors/scored_frac={scored_frac:.3f} over {rollouts:g} rollouts; samples {sample_frac:.3f}"
    )

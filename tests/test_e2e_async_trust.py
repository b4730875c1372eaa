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
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import ors_server

pytest.importorskip("trl")
pytest.importorskip("tokenizers")
pytest.importorskip("aiohttp")

from async_child import run_rollouts  # noqa: E402
from standin_vllm import echo_tokenizer  # noqa: E402
from envs.trust_support import TRUST_ENV, ScoredTrustAdapter, TrustAdapter  # noqa: E402

pytestmark = pytest.mark.slow  # real training: the fast tier leaves it out


WORDS = ["apple", "banana", "cherry", "damson", "elder", "fig"]
BROKEN = {"banana", "elder"}
NUM_GENERATIONS = 2
MAX_INFLIGHT = 4
GROUPS_WANTED = 6
WORD = re.compile(r"Call echo with the word '([^']+)'")


@pytest.mark.timeout(300)
def test_async_rollout_loop_with_environment_owned_data(
    ors_servers: ors_server.Servers, tmp_path: Path
) -> None:
    from trl.experimental.async_grpo.async_grpo_trainer import _reduce_metric

    server = ors_servers.own(TRUST_ENV)
    try:
        probe = TrustAdapter(base_url=server.url)
        tokenizer = echo_tokenizer([probe.echo, probe.hint], WORDS)
        run = run_rollouts(
            functools.partial(ScoredTrustAdapter, base_url=server.url),
            tokenizer,
            NUM_GENERATIONS,
            MAX_INFLIGHT,
            GROUPS_WANTED * NUM_GENERATIONS,
        )
    finally:
        server.stop()
    samples, pushed = run.samples, run.metrics

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

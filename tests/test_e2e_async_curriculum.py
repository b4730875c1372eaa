"""The pass-rate curriculum under TRL's AsyncGRPO rollout loop (a spawned child started as
``AsyncRolloutWorker.start()`` does, tests/async_child.py), with environment-owned data on
coinechoenv (coinenv's tasks behind the stand-in model's echo prompt: tasks 0-6 always
pass, 7-13 never, 14-19 half the time, drawn by the environment).

The child reads ``num_generations`` from its start arguments, the adapter chooses one task
per group, ``get_reward()`` settles each rollout into the curriculum as it finishes, and
the ``ors/curriculum/*`` metrics reach the worker's metrics queue. After the first pass
over the 20 tasks most groups go to the tasks solved half the time (uniform: 6 in 20).
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from pathlib import Path

import pytest

import ors_server

pytest.importorskip("trl")
pytest.importorskip("tokenizers")
pytest.importorskip("aiohttp")

from async_child import run_rollouts  # noqa: E402
from standin_vllm import echo_tokenizer  # noqa: E402
from envs.coin_echo_support import (  # noqa: E402
    COIN_ECHO_ENV,
    CoinEchoAdapter,
    ScoredCoinEchoAdapter,
)

NUM_GENERATIONS = 4
MAX_INFLIGHT = 4
GROUPS_WANTED = 44
WORD = re.compile(r"Call echo with the word 't(\d+)'")


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_async_rollout_loop_follows_the_curriculum(
    ors_servers: ors_server.Servers, tmp_path: Path
) -> None:
    server = ors_servers.own(COIN_ECHO_ENV)
    try:
        probe = CoinEchoAdapter(base_url=server.url)
        tokenizer = echo_tokenizer([probe.echo], [f"t{i}" for i in range(20)])
        run = run_rollouts(
            functools.partial(ScoredCoinEchoAdapter, base_url=server.url, curriculum="pass_rate"),
            tokenizer,
            NUM_GENERATIONS,
            MAX_INFLIGHT,
            GROUPS_WANTED * NUM_GENERATIONS,
            timeout=300,
        )
    finally:
        server.stop()
    samples, pushed = run.samples, run.metrics

    groups: dict[int, list[int]] = defaultdict(list)
    for sample in samples:
        groups[sample.group_id].append(int(WORD.findall(sample.prompt[-1]["content"])[-1]))
    assert all(len(set(tasks)) == 1 for tasks in groups.values()), groups
    sequence = [groups[g][0] for g in sorted(groups)]
    print(f"\nasync curriculum task sequence by group: {sequence}")
    assert sorted(sequence[:20]) == list(range(20)), sequence  # the first pass
    later = sequence[24:]  # a few groups were in flight when the first pass was scored
    assert sum(1 for t in later if t >= 14) / len(later) > 0.6, sequence
    learning = [
        m["ors/curriculum/tasks_learning"] for m in pushed if "ors/curriculum/tasks_learning" in m
    ]
    assert learning and max(learning) >= 3, learning

"""Async-ready factories (orsgen/runtime/adapter.py).

The adapter class and functools.partial of it pickle and work in spawned processes,
and instances can be driven from a thread pool the way AsyncGRPOTrainer's rollout
worker drives them: resets awaited one after another through ``run_in_executor``,
tool calls of many rollouts in flight at once.

A real ``AsyncGRPOTrainer`` rollout worker is not run here: ``AsyncRolloutWorker``
refuses to start without vLLM (not installed, no GPU). ``test_async_grpo_access_pattern``
reproduces its access pattern (see trl/experimental/async_grpo/async_rollout_worker.py,
``_generate_loop`` and ``_execute_tool_calls``) over a pickled factory.
"""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
import pickle
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from envs.runtime_support import partial_echo, spawned_rollout

from generated.echo import EchoEnv
from orsgen.runtime.sessions import drift

WORDS = ["apple", "banana", "cherry", "damson"]


pytestmark = pytest.mark.usefixtures("fresh_runtime")


def test_class_and_partial_pickle() -> None:
    assert pickle.loads(pickle.dumps(EchoEnv)) is EchoEnv
    factory = functools.partial(EchoEnv, base_url="http://127.0.0.1:9", group_size=8, timeout=5)
    clone = pickle.loads(pickle.dumps(factory))
    env = clone()  # constructing does no I/O
    assert (
        type(env) is EchoEnv
        and env._config.sessions.prefetch_group == 8
        and env._config.rollouts.timeout == 5
    )


@pytest.mark.slow
def test_spawned_processes_run_rollouts(echo_server) -> None:
    base = echo_server.open_sessions()
    factory = partial_echo(echo_server.url, group_size=2)
    ctx = multiprocessing.get_context("spawn")
    pool = ctx.Pool(2)
    results = pool.starmap(
        spawned_rollout,
        [(factory, 0, "apple", True), (factory, 2, "cherry", False), (factory, 3, "nope", False)],
    )
    pool.close()  # workers exit normally (a terminate() would skip their exit hooks)
    pool.join()
    assert [r[1] for r in results] == ["echo: apple", "echo: cherry", "echo: nope"]
    assert [r[2] for r in results] == [1.0, 1.0, 0.0]
    assert "cherry" in results[1][0]
    # Unclosed sessions in the workers were closed when the worker processes exited.
    assert echo_server.wait_sessions(base, timeout=20) == base


def test_async_grpo_access_pattern(echo_server) -> None:
    """16 rollouts, G=4, 16 instances; resets serial through a thread pool, tool calls
    concurrent in the pool: the AsyncGRPO rollout worker's pattern."""
    base = echo_server.open_sessions()
    factory = pickle.loads(pickle.dumps(partial_echo(echo_server.url)))
    rows = [{"prompt": [], "task_index": i // 4, "difficulty": "x"} for i in range(16)]
    pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="grpo-tool")
    envs = [factory() for _ in rows]
    echo_server.reset_counts()

    async def rollout(env: EchoEnv, row: dict) -> tuple[str, float | None]:
        loop = asyncio.get_running_loop()
        out = await loop.run_in_executor(
            pool, functools.partial(env.echo, text=WORDS[row["task_index"]])
        )
        return out, env.reward

    async def main() -> list[tuple[str, float | None]]:
        loop = asyncio.get_running_loop()
        tasks = []
        for env, row in zip(envs, rows):
            prompt = await loop.run_in_executor(pool, functools.partial(env.reset, **row))
            assert WORDS[row["task_index"]] in prompt
            tasks.append(asyncio.create_task(rollout(env, row)))
        return await asyncio.gather(*tasks)

    results = asyncio.run(main())
    assert results == [(f"echo: {WORDS[i // 4]}", 1.0) for i in range(16)]
    req = echo_server.requests()
    assert req["POST /echoenv/call"] == 16 and req["POST /create_session"] == 16
    # The pattern was learned after the first group: later groups were prefetched.
    assert envs[0]._prefetcher.stats["used_prefetched"] == 9
    for env in envs:
        env.close()
    pool.shutdown()
    assert echo_server.wait_sessions(base) == base


def test_one_instance_hammered_from_many_threads(echo_server) -> None:
    """Concurrent calls on one instance serialize on its lock: state stays consistent."""
    env = EchoEnv(base_url=echo_server.url, prefetch=False)
    env.reset(task_index=1)
    with ThreadPoolExecutor(max_workers=8) as pool:
        outs = list(pool.map(lambda i: env.echo(text=f"w{i}"), range(24)))
    assert outs == [f"echo: w{i}" for i in range(24)]
    assert env.rewards == [0.0] * 24 and len(env.metadata) == 24
    env.close()

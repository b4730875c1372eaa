"""Group prefetch (orsgen/runtime/sessions/pool.py) for GRPOTrainer's serial reset pattern, on a real
server (the same logic with fake sessions: tests/test_runtime_pool.py).

GRPO calls reset(task_index=i) G times in a row, on different pooled instances of one
class. The first reset of a group opens the group's G sessions concurrently; the rest
take ready sessions. Counts are read on a real server; no timing asserts.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest

from generated.echo import EchoEnv
from orsgen.runtime.sessions import drift

WORDS = ["apple", "banana", "cherry", "damson"]


@pytest.fixture(autouse=True)
def _fresh_runtime(fresh_runtime: None, echo_server) -> None:
    # Keep the guard's one extra request (per server) out of these counts.
    drift.claim_check(EchoEnv, echo_server.url)


def _close_all(envs: list[EchoEnv]) -> None:
    for env in envs:
        env.close()


def test_fixed_group_size_opens_the_group_at_once(echo_server) -> None:
    factory = functools.partial(EchoEnv, base_url=echo_server.url, group_size=4)
    envs = [factory() for _ in range(8)]
    base = echo_server.open_sessions()
    echo_server.reset_counts()
    prompts = [env.reset(task_index=i // 4) for i, env in enumerate(envs[:1])]
    # The first reset of the group returned; the other three of its group are open too.
    assert echo_server.wait_sessions(base + 4) == base + 4
    prompts += [env.reset(task_index=(i + 1) // 4) for i, env in enumerate(envs[1:])]
    assert [WORDS[i // 4] in p for i, p in enumerate(prompts)] == [True] * 8
    stats = envs[0]._prefetcher.stats
    assert stats == {"opened": 8, "used_prefetched": 6, "discarded": 0}
    assert echo_server.requests()["POST /create_session"] == 8
    # Every rollout owns a distinct, working session on its own task.
    for i, env in enumerate(envs):
        assert env.echo(text=WORDS[i // 4]) == f"echo: {WORDS[i // 4]}"
        assert env.reward == 1.0
    assert len({env._slot.session.sid for env in envs}) == 8
    _close_all(envs)
    assert echo_server.wait_sessions(base) == base


def test_group_size_is_learned_from_the_pattern(echo_server) -> None:
    envs = [EchoEnv(base_url=echo_server.url) for _ in range(3)]
    pf = envs[0]._prefetcher
    opened_per_reset = []
    for task in (0, 1, 2, 3):
        for env in envs:  # TRL resets pooled instances one after another
            before = pf.stats["opened"]
            assert WORDS[task] in env.reset(task_index=task)
            opened_per_reset.append(pf.stats["opened"] - before)
    # First group: pattern unknown, one session per reset. Then three at once per group.
    assert opened_per_reset == [1, 1, 1, 3, 0, 0, 3, 0, 0, 3, 0, 0]
    assert pf.learned == 3 and pf.stats["discarded"] == 0
    _close_all(envs)


def test_pattern_break_closes_unused_sessions_at_once(echo_server) -> None:
    base = echo_server.open_sessions()
    a, b, c = (EchoEnv(base_url=echo_server.url, group_size=4) for _ in range(3))
    a.reset(task_index=0)
    b.reset(task_index=0)
    assert echo_server.wait_sessions(base + 4) == base + 4  # 2 held, 2 waiting
    c.reset(task_index=1)  # the pattern breaks: task 0's two unused sessions go
    pf = a._prefetcher
    assert pf.stats["discarded"] == 2 and pf.unused == 3
    assert echo_server.wait_sessions(base + 6) == base + 6  # a, b, c + task 1's 3 unused
    c.close()  # close() also ends the class's unused sessions
    assert pf.unused == 0
    assert echo_server.wait_sessions(base + 2) == base + 2
    _close_all([a, b])
    assert echo_server.wait_sessions(base) == base


def test_never_more_than_one_group_unused(echo_server) -> None:
    envs = [EchoEnv(base_url=echo_server.url, group_size=3) for _ in range(4)]
    pf = envs[0]._prefetcher
    # Irregular streams: short groups, long runs, the same task in consecutive groups.
    for i, task in enumerate([0, 1, 1, 2, 2, 2, 2, 2, 3, 0, 0, 0, 0]):
        envs[i % 4].reset(task_index=task)
        assert pf.unused <= 2
    _close_all(envs)
    assert pf.unused == 0


def test_prefetch_off(echo_server) -> None:
    base = echo_server.open_sessions()
    envs = [EchoEnv(base_url=echo_server.url, prefetch=False) for _ in range(4)]
    echo_server.reset_counts()
    for env in envs:
        env.reset(task_index=2)
    assert echo_server.requests()["POST /create_session"] == 4
    assert envs[0]._prefetcher.unused == 0
    assert echo_server.wait_sessions(base + 4) == base + 4
    _close_all(envs)
    assert echo_server.wait_sessions(base) == base


def test_pooled_instances_reused_across_batches(echo_server) -> None:
    base = echo_server.open_sessions()
    envs = [EchoEnv(base_url=echo_server.url, group_size=2) for _ in range(4)]
    for batch in ([0, 0, 1, 1], [2, 2, 3, 3], [1, 1, 0, 0]):
        for env, task in zip(envs, batch):
            assert WORDS[task] in env.reset(task_index=task)
        for env, task in zip(envs, batch):
            env.echo(text=WORDS[task])
        assert [env.reward for env in envs] == [1.0] * 4
    # Each reset closed the instance's previous session: only the current four are open.
    assert echo_server.wait_sessions(base + 4) == base + 4
    _close_all(envs)
    assert echo_server.wait_sessions(base) == base

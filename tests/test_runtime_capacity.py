"""Training under a server's capacity limits (issue 18): "not now" is waited out, and
``max_sessions`` keeps a process under a limit.

Real echo ORS servers behind a real capacity-limiting proxy (``tests/capacity_proxy.py``,
its own process): it answers ``POST /create`` with HTTP 429 and ``Retry-After: 1`` when its
limit of sessions is open, or at random. Nothing in the SDK or its transport is mocked. The
SDK alone retries a 429 three times (``openreward/api/_session/http.py``,
``_ENV_SERVER_MAX_ATTEMPTS``), so every test here refuses more often than that.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import ors_server
import pytest
from conftest import ECHO_ENV

from generated.echo import EchoEnv, outcome_reward
from orsgen.runtime.adapter import UNAVAILABLE_PROMPT

pytestmark = [pytest.mark.usefixtures("fresh_runtime"), pytest.mark.timeout(300)]

TARGETS = ["apple", "banana", "cherry", "damson"]
SDK_ATTEMPTS = 3  # the SDK's own tries of one 429'd request


def _rollout(env: EchoEnv, task: int) -> float | None:
    prompt = env.reset(task_index=task)
    assert prompt != UNAVAILABLE_PROMPT, f"task {task} ran degraded"
    env.echo(text=TARGETS[task % 4])
    return outcome_reward([env])[0]


def _in_threads(work: Callable[[int], list[float | None]], n: int) -> tuple[list[Any], list[str]]:
    """Run ``work(i)`` for i in range(n) on n threads; their results and what they raised."""
    results: list[Any] = [None] * n
    raised: list[str] = []

    def run(i: int) -> None:
        try:
            results[i] = work(i)
        except Exception as exc:  # noqa: BLE001 - what would reach the trainer
            raised.append(f"thread {i}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not any(t.is_alive() for t in threads), "a rollout thread never finished"
    return results, raised


@pytest.mark.slow
def test_the_proxy_refuses_at_its_limit_and_counts_created_deleted_and_reaped(
    ors_servers: ors_server.Servers, capacity_proxy: Callable[..., Any]
) -> None:
    """The test infrastructure itself, against the raw adapter behaviour of the SDK."""
    server = ors_servers.own(ECHO_ENV, reaper=2.0)
    proxy = capacity_proxy(server.url, limit=1)
    held = EchoEnv(base_url=proxy.url, prefetch=False)
    held.reset(task_index=0)
    assert (proxy.stats()["open"], proxy.stats()["created"]) == (1, 1)
    held.close()
    stats = proxy.stats()
    assert (stats["open"], stats["deleted"]) == (0, 1)
    # A session nobody pings any more is reaped by the server; the proxy forgets it too.
    reaped = EchoEnv(base_url=proxy.url, prefetch=False, keepalive=60)
    reaped.reset(task_index=1)
    assert proxy.stats()["open"] == 1
    deadline = time.monotonic() + 30
    while proxy.stats()["open"] and time.monotonic() < deadline:
        time.sleep(0.2)
    stats = proxy.stats()
    assert (stats["open"], stats["reaped"], stats["max_open"]) == (0, 1, 1)


@pytest.mark.slow
def test_half_of_creations_refused_at_random_every_rollout_scores(
    echo_server: ors_server.RunningServer, capacity_proxy: Callable[..., Any]
) -> None:
    """4 adapters x 8 rounds of reset-and-call while a busy platform refuses half of all
    session creations: no exception reaches the caller and every rollout scores (the SDK
    alone raised twice in 32 such rollouts)."""
    proxy = capacity_proxy(echo_server.url, refuse=0.5, seed=18)
    envs = [EchoEnv(base_url=proxy.url) for _ in range(4)]

    def rounds(i: int) -> list[float | None]:
        return [_rollout(envs[i], (i + r) % 4) for r in range(8)]

    try:
        results, raised = _in_threads(rounds, 4)
        assert raised == []
        assert [r for per in results for r in per] == [1.0] * 32
        stats = proxy.stats()
        # Refusals really happened, often enough that the SDK's own retries ran out.
        assert stats["refused_random"] >= SDK_ATTEMPTS, stats
    finally:
        EchoEnv.close_all()
    assert proxy.wait_open(0) == 0


@pytest.mark.slow
def test_a_third_reset_waits_while_two_are_held_and_opens_when_one_closes(
    echo_server: ors_server.RunningServer, capacity_proxy: Callable[..., Any]
) -> None:
    proxy = capacity_proxy(echo_server.url, limit=2)
    first, second, third = (EchoEnv(base_url=proxy.url, prefetch=False) for _ in range(3))
    first.reset(task_index=0)
    second.reset(task_index=1)
    outcome: dict[str, Any] = {}

    def third_reset() -> None:
        try:
            outcome["prompt"] = third.reset(task_index=2)
        except Exception as exc:  # noqa: BLE001 - the failure this test looks for
            outcome["raised"] = exc

    waiter = threading.Thread(target=third_reset)
    try:
        waiter.start()
        # Wait, by the proxy's count, until more creations were refused than the SDK's own
        # retries make: the reset must still be waiting, not failed.
        deadline = time.monotonic() + 60
        while proxy.stats()["refused_limit"] <= SDK_ATTEMPTS and waiter.is_alive():
            assert time.monotonic() < deadline, proxy.stats()
            time.sleep(0.1)
        assert waiter.is_alive(), f"the third reset did not wait: {outcome}"
        first.close()
        waiter.join(timeout=60)
        assert not waiter.is_alive()
        assert "raised" not in outcome, outcome
        assert outcome["prompt"] == "Call echo with the word 'cherry'."
        third.echo(text="cherry")
        assert outcome_reward([third]) == [1.0]
        assert proxy.stats()["max_open"] == 2
    finally:
        EchoEnv.close_all()
    assert proxy.wait_open(0) == 0


@pytest.mark.slow
def test_max_sessions_keeps_the_process_under_the_cap(
    echo_server: ors_server.RunningServer, capacity_proxy: Callable[..., Any]
) -> None:
    """max_sessions=3, 6 threads x 4 rollouts: the server never sees more than 3 sessions
    of this process open, every rollout scores, and none is left open. The adapters keep
    their scored rollouts' state readable while their places go to others."""
    proxy = capacity_proxy(echo_server.url)  # no limit: it only counts
    envs = [EchoEnv(base_url=proxy.url, max_sessions=3) for _ in range(6)]

    def rounds(i: int) -> list[float | None]:
        out = []
        for r in range(4):
            out.append(_rollout(envs[i], (i + r) % 4))
            assert envs[i].finished and envs[i].reward == 1.0
        return out

    try:
        results, raised = _in_threads(rounds, 6)
        assert raised == []
        assert [r for per in results for r in per] == [1.0] * 24
        assert 1 <= proxy.stats()["max_open"] <= 3, proxy.stats()
        # Every adapter still holds a scored rollout; none of them holds a place now.
        assert outcome_reward(envs) == [1.0] * 6
        assert proxy.wait_open(0) == 0
    finally:
        EchoEnv.close_all()
    assert proxy.wait_open(0) == 0


@pytest.mark.slow
def test_a_cap_lower_than_one_sync_step_says_so_at_once_with_the_number_needed(
    echo_server: ors_server.RunningServer, capacity_proxy: Callable[..., Any]
) -> None:
    """Sync GRPOTrainer resets a step's whole batch, in its main thread, before it generates:
    with 4 rollouts per step and max_sessions=2 the third reset could never get a place. It
    says so at once (not after reconnect_for), naming the number needed."""
    from orsgen.runtime.sessions.cap import SessionCapError

    proxy = capacity_proxy(echo_server.url)
    batch = [EchoEnv(base_url=proxy.url, max_sessions=2, prefetch=False) for _ in range(4)]
    try:
        batch[0].reset(task_index=0)
        batch[1].reset(task_index=1)
        with pytest.raises(SessionCapError, match=r"max_sessions=2 .* at least 4"):
            batch[2].reset(task_index=2)
        assert proxy.stats()["created"] == 2
    finally:
        EchoEnv.close_all()
    assert proxy.wait_open(0) == 0


def test_max_sessions_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_sessions"):
        EchoEnv(base_url="http://127.0.0.1:9", max_sessions=0)


@pytest.mark.slow
def test_a_refused_stretch_logs_once_when_it_starts_and_once_when_it_ends(
    echo_server: ors_server.RunningServer,
    capacity_proxy: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One line when the server starts refusing, one when it accepts again; none per retry."""
    proxy = capacity_proxy(echo_server.url, limit=0)
    env = EchoEnv(base_url=proxy.url, prefetch=False)
    outcome: dict[str, Any] = {}
    waiter = threading.Thread(target=lambda: outcome.update(prompt=env.reset(task_index=3)))
    with caplog.at_level(logging.WARNING, logger="orsgen.runtime"):
        waiter.start()
        deadline = time.monotonic() + 60
        while proxy.stats()["refused_limit"] <= 2 * SDK_ATTEMPTS and waiter.is_alive():
            assert time.monotonic() < deadline, proxy.stats()
            time.sleep(0.1)
        proxy.configure(limit=None)
        waiter.join(timeout=60)
    try:
        assert outcome.get("prompt") == "Call echo with the word 'damson'.", outcome
        lines = [r.getMessage() for r in caplog.records if r.name == "orsgen.runtime"]
        refusing = [line for line in lines if "refuses new sessions" in line]
        accepting = [line for line in lines if "accepts new sessions again" in line]
        assert len(refusing) == 1 and len(accepting) == 1, lines
        assert proxy.url in refusing[0] and proxy.url in accepting[0]
    finally:
        EchoEnv.close_all()


@pytest.mark.slow
def test_refusals_past_the_window_degrade_and_strict_raises(
    echo_server: ors_server.RunningServer, capacity_proxy: Callable[..., Any]
) -> None:
    """A server that keeps refusing past reconnect_for is an outage: the rollout runs
    unscored, or strict=True raises. A first-ever reset is no exception: a refusal means
    the server was reached."""
    from orsgen.runtime.errors import EnvironmentUnavailableError

    proxy = capacity_proxy(echo_server.url, limit=0)
    env = EchoEnv(base_url=proxy.url, prefetch=False, reconnect_for=3)
    assert env.reset(task_index=0) == UNAVAILABLE_PROMPT
    try:  # what the model reads, returned or raised (TRL shows it {"error": str(e)})
        seen = str(env.echo(text="apple"))
    except Exception as exc:  # noqa: BLE001
        seen = str(exc)
    assert "environment unavailable" in seen
    assert outcome_reward([env]) == [None]
    strict = EchoEnv(base_url=proxy.url, prefetch=False, reconnect_for=3, strict=True)
    with pytest.raises(EnvironmentUnavailableError, match="429"):
        strict.reset(task_index=0)
    assert proxy.stats()["created"] == 0

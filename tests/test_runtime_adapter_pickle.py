"""The factory pickles (AsyncGRPOTrainer pickles ``environment_factory``): a process
started with the 'spawn' method unpickles the adapter class, or a ``functools.partial``
of it, and completes a rollout against a real server."""

from __future__ import annotations

import functools
import multiprocessing
import pickle
from typing import Any

import pytest

from generated.echo import EchoEnv, outcome_reward

pytestmark = pytest.mark.timeout(180)


def rollout_in_child(payload: bytes, base_url: str | None, queue: Any) -> None:
    """Runs in the spawned process: unpickle the factory, build, reset, call, score."""
    try:
        factory = pickle.loads(payload)
        env = factory() if base_url is None else factory(base_url=base_url)
        prompt = env.reset(task_index=2)
        output = env.echo(text="cherry")
        result = {
            "class": f"{type(env).__module__}.{type(env).__qualname__}",
            "prompt": prompt,
            "output": output,
            "rewards": list(env.rewards),
            "finished": env.finished,
            "outcome": outcome_reward([env]),
        }
        env.close()
        queue.put(("ok", result))
    except BaseException as exc:  # noqa: BLE001 - report anything to the parent
        queue.put(("error", f"{type(exc).__name__}: {exc}"))


def run_spawned(factory: Any, base_url: str | None) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=rollout_in_child, args=(pickle.dumps(factory), base_url, queue))
    proc.start()
    try:
        status, value = queue.get(timeout=120)
    finally:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.terminate()
            proc.join()
    assert status == "ok", value
    assert proc.exitcode == 0
    return dict(value)


def check(result: dict[str, Any]) -> None:
    assert result["class"] == "generated.echo.adapter.EchoEnv"
    assert "cherry" in result["prompt"]
    assert result["output"] == "echo: cherry"
    assert result["rewards"] == [1.0]
    assert result["finished"] is True
    assert result["outcome"] == [1.0]


def test_factories_pickle_by_reference(echo_server) -> None:
    assert pickle.loads(pickle.dumps(EchoEnv)) is EchoEnv
    part = pickle.loads(pickle.dumps(functools.partial(EchoEnv, base_url=echo_server.url)))
    assert part.func is EchoEnv and part.keywords == {"base_url": echo_server.url}


@pytest.mark.slow
def test_spawned_process_runs_the_class_and_a_partial(echo_server) -> None:
    echo_server.reset_counts()
    before = echo_server.open_sessions()  # the shared server may hold other tests' sessions
    check(run_spawned(EchoEnv, echo_server.url))
    check(run_spawned(functools.partial(EchoEnv, base_url=echo_server.url), None))
    assert echo_server.requests().get("POST /echoenv/call") == 2
    assert echo_server.wait_sessions(before) == before

"""The committed example package talks to a real echo server end to end."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest

from generated.echo import EchoEnv, load_tasks, outcome_reward


def test_rollout_against_real_server(echo_server) -> None:
    base = echo_server.open_sessions()  # the server is shared with other tests
    env = EchoEnv(base_url=echo_server.url)
    prompt = env.reset(task_index=0)
    assert "apple" in prompt
    assert env.echo(text="apple") == "echo: apple"
    assert env.reward == 1.0 and env.finished
    assert outcome_reward([env]) == [1.0]
    env.close()
    assert echo_server.wait_sessions(base) == base


def test_dataset_rows(echo_server) -> None:
    ds = load_tasks(base_url=echo_server.url)
    assert ds["task_index"] == [0, 1, 2, 3]
    assert ds["target"] == ["apple", "banana", "cherry", "damson"]
    assert ds[0]["prompt"] == [{"role": "user", "content": ""}]


def test_the_package_docstring_example_runs(echo_server) -> None:
    # The usage example a user reads first in generated/echo/__init__.py, run as written
    # (against the test's server, with a stand-in trainer that keeps its arguments).
    import textwrap

    import generated.echo

    doc = generated.echo.__doc__ or ""
    lines = doc.split("::\n", 1)[1].splitlines()
    end = next(i for i, line in enumerate(lines) if line and not line.startswith("    "))
    example = textwrap.dedent("\n".join(lines[:end]))
    assert "GRPOTrainer(" in example, example
    example = example.replace('"http://127.0.0.1:8080"', repr(echo_server.url))
    kept: dict[str, object] = {}
    scope = {"GRPOTrainer": lambda **kw: kept.update(kw), "GRPOConfig": lambda *a: None}
    exec(compile(example, "generated/echo/__init__.py (docstring)", "exec"), scope)
    assert kept["train_dataset"]["target"][0] == "apple"  # type: ignore[index]
    env = kept["environment_factory"]()  # type: ignore[operator]
    assert "apple" in env.reset(task_index=0)
    env.close()


# What GRPOTrainer passes every reward function besides ``environments`` and
# ``completions`` (``_calculate_rewards``, trl/trainer/grpo_trainer.py around line 1585),
# the dataset row's columns, and one a later TRL might add.
def _trl_keywords(log_metric: Any) -> dict[str, Any]:
    return {
        "prompts": [[{"role": "user", "content": ""}]],
        "completion_ids": [[1, 2]],
        "trainer_state": object(),
        "log_metric": log_metric,
        "log_extra": lambda column, values: None,
        "task_index": [0],
        "target": ["apple"],
        "a_keyword_from_a_later_trl": object(),
    }


def test_the_generated_outcome_reward_hands_log_metric_to_the_runtime(echo_server) -> None:
    """issue 23: called through ``generated.echo.rewards`` (what users pass to TRL), the
    runtime gets TRL's ``log_metric`` and logs the batch's ``ors/*`` figures through it."""
    from generated.echo import rewards

    env = EchoEnv(base_url=echo_server.url)
    try:
        env.reset(task_index=0)
        assert env.echo(text="apple") == "echo: apple"
        logged: dict[str, float] = {}
        completions = [[{"role": "assistant", "content": "done"}]]
        keywords = _trl_keywords(lambda name, value: logged.__setitem__(name, value))
        assert rewards.outcome_reward([env], completions, **keywords) == [1.0]
    finally:
        env.close()
    assert logged["ors/rollouts"] == 1.0
    assert logged["ors/scored_frac"] == 1.0 and logged["ors/finished_frac"] == 1.0


@pytest.mark.parametrize("package", ["generated.echo", "generated.rich", "bench.benchenv"])
def test_every_generated_reward_function_passes_trls_keywords_on(
    package: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each public function of a generated ``rewards.py`` hands every keyword it is given
    to the runtime function it stands on (imported there as ``_<name>``), unchanged."""
    rewards = importlib.import_module(f"{package}.rewards")
    functions = [
        name
        for name, f in vars(rewards).items()
        if inspect.isfunction(f) and not name.startswith("_") and f.__module__ == rewards.__name__
    ]
    assert sorted(functions) == ["group_reward", "outcome_reward"]
    keywords = _trl_keywords(lambda name, value: None)
    for name in functions:
        received: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        monkeypatch.setattr(
            rewards, f"_{name}", lambda *args, **kwargs: received.append((args, kwargs)) or []
        )
        environments, completions = [object()], [[{"role": "assistant", "content": "x"}]]
        getattr(rewards, name)(environments, completions, **keywords)
        assert len(received) == 1, name
        args, passed = received[0]
        assert [*args, *passed.values()][:2] == [environments, completions], name
        assert all(passed.get(k) is v for k, v in keywords.items()), (name, passed)

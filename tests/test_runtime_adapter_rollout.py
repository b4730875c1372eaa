"""Rollouts through the adapter (orsgen/runtime/adapter.py), as TRL's bridge runs them:
the prompt ``reset`` returns, right and wrong calls with their reward and ``finished``,
the reward function over several environments, and isolation between instances.
Expected values come from tests/envs/rules_env.py."""

from __future__ import annotations

import pytest
from conftest import failed

from orsgen.runtime.choosing.tasks import TaskChoiceError

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def make_env(rules_pkg, rules_server):
    made = []

    def make():
        env = rules_pkg.RulesEnv(base_url=rules_server.url)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()
    assert rules_server.wait_sessions(0) == 0


def test_reset_returns_the_prompt_and_clears_state(make_env) -> None:
    env = make_env()
    assert env.reset(task_index=2) == "Answer with the word 'charlie'."
    assert (env.reward, env.rewards, env.metadata, env.finished, env.last_output) == (
        None,
        [],
        [],
        False,
        "",
    )
    env.answer(text="charlie")
    # A new reset starts a fresh episode with fresh state.
    assert env.reset(task_index=3) == "Answer with the word 'delta'."
    assert (env.reward, env.rewards, env.metadata, env.finished, env.last_output) == (
        None,
        [],
        [],
        False,
        "",
    )


def test_right_call(make_env) -> None:
    env = make_env()
    env.reset(task_index=1)
    assert env.answer(text="bravo") == "right"
    assert env.reward == 1.0
    assert env.rewards == [1.0]
    assert env.finished is True
    assert env.metadata == [{"right": True, "target": "bravo"}]
    assert env.last_output == "right"


def test_wrong_call(make_env) -> None:
    env = make_env()
    env.reset(task_index=1)
    assert env.answer(text="alpha") == "wrong: alpha"
    assert env.reward == 0.0
    assert env.rewards == [0.0]
    assert env.finished is False
    assert env.metadata == [{"right": False, "target": "bravo"}]
    # Wrong, then right: the episode finishes with the right answer's reward.
    assert env.answer(text="bravo") == "right"
    assert env.rewards == [0.0, 1.0] and env.reward == 1.0 and env.finished is True


def test_reset_is_keyword_compatible_with_trl(make_env) -> None:
    """TRL passes dataset columns as keywords. With no task and no trainer to learn the
    group size from, reset() says what to pass instead of opening task 0 (the adapter
    choosing tasks is tests/test_runtime_tasks.py's subject)."""
    env = make_env()
    with pytest.raises(TaskChoiceError, match="pass group_size="):
        env.reset(prompt=[{"role": "user", "content": ""}])
    assert env.reset(task_index=4, target="ignored", level=1, prompt=[]) == (
        "Answer with the word 'echo'."
    )


def test_outcome_reward_over_several_environments(rules_pkg, make_env) -> None:
    right, wrong, silent, unscored = make_env(), make_env(), make_env(), make_env()
    for i, env in enumerate((right, wrong, silent, unscored)):
        env.reset(task_index=i)
    right.answer(text="alpha")
    wrong.answer(text="alpha")  # task 1's target is bravo
    unscored.score()
    rewards = rules_pkg.outcome_reward(
        prompts=[[]] * 4,
        completions=[[]] * 4,
        environments=[right, wrong, silent, unscored],
        task_index=[0, 1, 2, 3],
    )
    assert rewards == [1.0, 0.0, None, None]


def test_instances_are_isolated(make_env, rules_server) -> None:
    a, b = make_env(), make_env()
    assert a.reset(task_index=0) == "Answer with the word 'alpha'."
    assert b.reset(task_index=5) == "Answer with the word 'foxtrot'."
    assert rules_server.wait_sessions(2) == 2  # one session each
    # Each answer is judged against its own instance's task.
    assert b.answer(text="alpha") == "wrong: alpha"
    assert a.answer(text="alpha") == "right"
    assert (a.rewards, a.finished) == ([1.0], True)
    assert (b.rewards, b.finished) == ([0.0], False)
    # Finishing a does not finish b; b can still be scored.
    assert b.answer(text="foxtrot") == "right"
    assert b.rewards == [0.0, 1.0] and a.rewards == [1.0]
    # Resetting one leaves the other's state and session alone.
    a.reset(task_index=1)
    assert a.rewards == [] and b.rewards == [0.0, 1.0] and b.finished is True
    assert rules_server.wait_sessions(2) == 2


def test_a_call_before_reset_is_a_raised_failure(make_env) -> None:
    env = make_env()
    failure = failed(env.answer, text="alpha")
    assert str(failure) == (
        "tool 'answer' failed in the environment (no_session): no open session; call reset() first"
    )
    assert env.last_output == f"Error: {failure}"
    assert env.rewards == [None] and env.reward is None


def test_reset_with_a_task_spec(make_env) -> None:
    """TRL's bridge also accepts an explicit ``task_spec`` instead of an index."""
    env = make_env()
    spec = {"target": "zulu", "level": 9, "prompt": "p", "task_index": -1}
    assert env.reset(task_spec=spec) == "Answer with the word 'zulu'."
    assert env.answer(text="zulu") == "right"
    assert env.rewards == [1.0] and env.finished is True

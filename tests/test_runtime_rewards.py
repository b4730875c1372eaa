"""The ``None`` rules of ``outcome_reward``, with rewards produced by a real server.

``score(value)`` in tests/envs/rules_env.py returns exactly ``value`` as the reward
(``None`` when no value is given); ``explode()`` raises inside the environment, which is
a failed call; a call after ``finished`` is refused by the server, another failed call.
"""

from __future__ import annotations

import pytest

from orsgen.runtime.errors import ToolCallFailure

pytestmark = pytest.mark.timeout(120)

# (steps, expected outcome). A step is ("score", value | None), ("explode",) or ("answer", text).
CASES = {
    "no call": ([], None),
    "only unscored calls": ([("score", None), ("score", None)], None),
    "only a failed call": ([("explode",)], None),
    "unscored then failed": ([("score", None), ("explode",)], None),
    "later unscored keeps the score": ([("score", 0.7), ("score", None)], 0.7),
    "later failed keeps the score": ([("score", 0.7), ("explode",)], 0.7),
    "refused after finish keeps the score": ([("answer", "alpha"), ("answer", "alpha")], 1.0),
    "zero is a score": ([("score", 0.0)], 0.0),
    "zero after unscored is a score": ([("score", None), ("score", 0.0)], 0.0),
    "zero replaces an earlier score": ([("score", 0.7), ("score", 0.0)], 0.0),
    "negative is a score": ([("score", -0.5)], -0.5),
    "negative after failed": ([("score", None), ("score", -2.0), ("explode",)], -2.0),
    "last of several scores": ([("score", 0.2), ("score", None), ("score", 0.9)], 0.9),
}


@pytest.fixture(scope="module")
def env(rules_pkg, rules_server):
    adapter = rules_pkg.RulesEnv(base_url=rules_server.url)
    yield adapter
    adapter.close()


def run_steps(env, steps) -> list[str]:
    env.reset(task_index=0)
    outputs = []
    for step in steps:
        if step[0] == "score":
            outputs.append(env.score() if step[1] is None else env.score(value=step[1]))
        elif step[0] == "explode":
            outputs.append(_raised(env.explode))
        else:
            outputs.append(_raised(env.answer, text=step[1]))
    return outputs


def _raised(call, *args, **kwargs):  # type: ignore[no-untyped-def]
    """The tool's text, or the ToolCallFailure it raised (TRL counts and shows it)."""
    try:
        return call(*args, **kwargs)
    except ToolCallFailure as exc:
        return exc


@pytest.mark.parametrize("name", list(CASES))
def test_outcome_reward_rules(name, env, rules_pkg) -> None:
    steps, expected = CASES[name]
    outputs = run_steps(env, steps)
    # Every step left one entry; failed ones came back as error text with None.
    assert len(env.rewards) == len(steps)
    for step, out, reward in zip(steps, outputs, env.rewards):
        if step[0] == "explode":
            assert isinstance(out, ToolCallFailure) and out.environment_failed and reward is None
    (got,) = rules_pkg.outcome_reward(environments=[env])
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected) and isinstance(got, float)
    # ``reward`` (what TRL's bridge reports) agrees with the reward function.
    assert env.reward == got


def test_the_refused_call_is_a_failed_call(env) -> None:
    outputs = run_steps(env, [("answer", "alpha"), ("answer", "alpha")])
    assert outputs[0] == "right"
    assert isinstance(outputs[1], ToolCallFailure), outputs[1]
    assert not outputs[1].environment_failed  # the episode finished: the model's own mistake
    assert env.rewards == [1.0, None]


def test_outcome_reward_is_elementwise(env, rules_pkg, rules_server) -> None:
    other = rules_pkg.RulesEnv(base_url=rules_server.url)
    try:
        run_steps(env, [("score", -1.0)])
        other.reset(task_index=0)
        assert rules_pkg.outcome_reward(environments=[env, other, env]) == [-1.0, None, -1.0]
    finally:
        other.close()

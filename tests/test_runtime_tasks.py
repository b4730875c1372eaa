"""Task choice when reset() gets no task (TRL's ``train_dataset=None``): a seeded order
that visits every task once per pass, handed out in blocks of the group size, restricted
by ``num_tasks`` / ``indices``, and refused (not mixed) under several processes.

Pure tests of orsgen/runtime/rollouts/tasks.py, then the adapter against a real trustenv server.
"""

from __future__ import annotations

import itertools
import logging

import ors_server
import pytest
from envs.trust_support import TRUST_ENV, TrustAdapter

from orsgen.runtime.rollouts import tasks, trainer_facts
from orsgen.runtime.rollouts.tasks import TaskChoiceError

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("fresh_runtime")]

PLACEHOLDER = {
    "prompt": [{"role": "user", "content": ""}]
}  # what TRL passes (grpo_trainer.py ~862)


@pytest.fixture(autouse=True)
def _fresh_choosers() -> None:
    tasks.samplers().clear()


@pytest.fixture(scope="module")
def server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(TRUST_ENV)


def _take(it, n):  # type: ignore[no-untyped-def]
    return list(itertools.islice(it, n))


def test_every_task_once_per_pass_in_blocks_of_the_group() -> None:
    got = _take(tasks.order(range(6), seed=3, group_size=2), 24)
    blocks = [got[i : i + 2] for i in range(0, 24, 2)]
    assert all(a == b for a, b in blocks), got
    firsts = [b[0] for b in blocks]
    assert sorted(firsts[:6]) == list(range(6)) and sorted(firsts[6:]) == list(range(6))
    assert firsts[:6] != firsts[6:]  # each pass is shuffled anew
    assert firsts[:6] != list(range(6))  # and not the split's own order


def test_the_seed_decides_the_order() -> None:
    one = _take(tasks.order(range(20), seed=1, group_size=1), 20)
    assert one == _take(tasks.order(range(20), seed=1, group_size=1), 20)
    assert one != _take(tasks.order(range(20), seed=2, group_size=1), 20)


def test_candidates_restrict_as_load_tasks_does() -> None:
    assert tasks.candidates(6, None, None) == [0, 1, 2, 3, 4, 5]
    assert tasks.candidates(6, 3, None) == [0, 1, 2]
    assert tasks.candidates(6, 10, None) == list(range(6))
    assert tasks.candidates(6, None, [5, 1]) == [5, 1]
    with pytest.raises(ValueError, match="outside"):
        tasks.candidates(6, None, [6])
    with pytest.raises(ValueError, match="not both"):
        tasks.candidates(6, 2, [1])
    with pytest.raises(ValueError, match="no tasks"):
        tasks.candidates(0, None, None)


def test_adapter_chooses_groups_of_one_task(server, caplog) -> None:  # type: ignore[no-untyped-def]
    envs = [TrustAdapter(base_url=server.url, group_size=2, seed=7) for _ in range(2)]
    caplog.set_level(logging.WARNING, logger="orsgen.runtime")
    prompts = []
    try:
        for _step in range(6):
            for env in envs:  # TRL resets a group's slots one after another
                prompts.append(env.reset(**PLACEHOLDER))
                assert env.rollout.episode.chosen
    finally:
        for env in envs:
            env.close()
    pairs = [prompts[i : i + 2] for i in range(0, 12, 2)]
    assert all(a == b for a, b in pairs), prompts
    assert len({a for a, _ in pairs}) == 6  # the first pass visits all six tasks
    expected = _take(tasks.order(range(6), seed=7, group_size=2), 12)
    words = ["apple", "banana", "cherry", "damson", "elder", "fig"]
    assert prompts == [f"Call echo with the word {words[i]!r}." for i in expected]
    said = [r.getMessage() for r in caplog.records if "chooses tasks" in r.getMessage()]
    assert len(said) == 1, said  # said once, not per reset
    assert "seed=7" in said[0] and "2 consecutive resets" in said[0]


def test_indices_restrict_the_choice(server) -> None:  # type: ignore[no-untyped-def]
    env = TrustAdapter(base_url=server.url, group_size=1, indices=[2, 5])
    try:
        got = {env.reset(**PLACEHOLDER) for _ in range(6)}
    finally:
        env.close()
    assert got == {"Call echo with the word 'cherry'.", "Call echo with the word 'fig'."}


def test_an_explicit_task_is_never_overridden(server) -> None:  # type: ignore[no-untyped-def]
    env = TrustAdapter(base_url=server.url, group_size=2)
    try:
        assert env.reset(task_index=3, **PLACEHOLDER) == "Call echo with the word 'damson'."
        assert env.rollout.episode.chosen is False
    finally:
        env.close()


def test_no_group_size_outside_a_trainer_is_an_error(server) -> None:  # type: ignore[no-untyped-def]
    env = TrustAdapter(base_url=server.url)
    with pytest.raises(TaskChoiceError) as info:
        env.reset(**PLACEHOLDER)
    text = str(info.value)
    assert "group_size=" in text and "train_dataset=load_tasks(" in text, text


def test_several_processes_raise_instead_of_mixing(server, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("WORLD_SIZE", "2")  # what torchrun sets in every rank
    env = TrustAdapter(base_url=server.url, group_size=2)
    with pytest.raises(TaskChoiceError) as info:
        env.reset(**PLACEHOLDER)
    text = str(info.value)
    assert "2 processes" in text and "train_dataset=load_tasks(...)" in text, text
    assert env._slot.session is None


class _FakeTrainer:
    """Only what trainer_facts.facts() reads of a GRPOTrainer: num_generations, environments, args.seed."""

    class args:  # noqa: N801 - mirrors trainer.args
        seed = 11

    num_generations = 3
    environments: list[object] = []

    def reset_all(self, env: TrustAdapter) -> str:
        return str(env.reset(**PLACEHOLDER))  # called from a method whose `self` is the trainer


def test_group_size_and_seed_come_from_the_calling_trainer(server) -> None:  # type: ignore[no-untyped-def]
    env = TrustAdapter(base_url=server.url)
    try:
        prompts = [_FakeTrainer().reset_all(env) for _ in range(6)]
    finally:
        env.close()
    expected = _take(tasks.order(range(6), seed=11, group_size=3), 6)
    words = ["apple", "banana", "cherry", "damson", "elder", "fig"]
    assert prompts == [f"Call echo with the word {words[i]!r}." for i in expected]


def test_trainer_facts_outside_any_trainer() -> None:
    assert trainer_facts.facts() is None
    assert trainer_facts.worker_metrics_queue() is None

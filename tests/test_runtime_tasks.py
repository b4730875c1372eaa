"""Task choice when reset() gets no task (TRL's ``train_dataset=None``): a seeded order
that visits every task once per pass, handed out in blocks of the group size, restricted
by ``num_tasks`` / ``indices``, and refused (not mixed) under several processes.

Pure tests of orsgen/runtime/choosing/tasks.py, then the adapter against a real trustenv server.
"""

from __future__ import annotations

import itertools
import logging

import ors_server
import pytest
from envs.trust_support import TRUST_ENV, TrustAdapter
from trl_standin import as_trl
from uniform_passes import group_task, order

from orsgen.runtime.choosing import tasks
from orsgen.runtime.choosing.chooser import Chooser, Layout
from orsgen.runtime.choosing.tasks import TaskChoiceError
from orsgen.runtime.records import trainer_facts
from orsgen.runtime.records.episode import Outcome

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
    got = _take(order(range(6), seed=3, group_size=2), 24)
    blocks = [got[i : i + 2] for i in range(0, 24, 2)]
    assert all(a == b for a, b in blocks), got
    firsts = [b[0] for b in blocks]
    assert sorted(firsts[:6]) == list(range(6)) and sorted(firsts[6:]) == list(range(6))
    assert firsts[:6] != firsts[6:]  # each pass is shuffled anew
    assert firsts[:6] != list(range(6))  # and not the split's own order


def test_the_seed_decides_the_order() -> None:
    one = _take(order(range(20), seed=1, group_size=1), 20)
    assert one == _take(order(range(20), seed=1, group_size=1), 20)
    assert one != _take(order(range(20), seed=2, group_size=1), 20)


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
    expected = _take(order(range(6), seed=7, group_size=2), 12)
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


def test_group_size_and_seed_come_from_the_calling_trainer(server) -> None:  # type: ignore[no-untyped-def]
    env = TrustAdapter(base_url=server.url)
    try:
        trainer = as_trl().GRPOTrainer()  # num_generations 3, args.seed 11
        prompts = [trainer.reset_all(env, PLACEHOLDER) for _ in range(6)]
    finally:
        env.close()
    expected = _take(order(range(6), seed=11, group_size=3), 6)
    words = ["apple", "banana", "cherry", "damson", "elder", "fig"]
    assert prompts == [f"Call echo with the word {words[i]!r}." for i in expected]


def test_trainer_facts_outside_any_trainer() -> None:
    assert trainer_facts.facts() is None
    assert trainer_facts.worker_metrics_queue() is None


def test_ranks_choose_by_global_group_and_keep_split_groups_whole() -> None:
    # 2 ranks, 6 rows each per generation, groups of 4: the middle group of each
    # generation is split across the ranks (rows 4-5 on rank 0, rows 6-7 on rank 1).
    ranks = [Chooser(range(20), 3, 4) for _ in (0, 1)]
    for r, chooser in enumerate(ranks):  # the uniform passes share no outcome
        chooser.spread(Layout(rank=r, world=2, rows=6), lambda mine: [mine])
    rows: list[int] = []
    for _generation in range(5):
        for chooser in ranks:  # the global order: rank 0's block, then rank 1's
            rows += [chooser.choose() for _ in range(6)]
    groups = [rows[i : i + 4] for i in range(0, len(rows), 4)]
    assert all(len(set(g)) == 1 for g in groups), rows
    # the same order one process would follow
    assert [g[0] for g in groups] == [group_task(range(20), 3, g) for g in range(15)]


def test_ranks_sharing_outcomes_hold_one_curriculum_state() -> None:
    """Two ranks in two threads, sharing outcomes through an in-process all-gather at each
    generation's first reset (what chooser.all_gather does over torch.distributed)."""
    import random
    import threading

    from orsgen.runtime.choosing.curriculum import PassRateCurriculum

    passes = [1.0] * 7 + [0.0] * 7 + [0.5] * 6
    barrier = threading.Barrier(2, timeout=30)
    slots: list[object] = [None, None]

    def gather_for(rank: int):  # type: ignore[no-untyped-def]
        def all_gather(mine: object) -> list[object]:
            slots[rank] = mine
            barrier.wait()
            both = list(slots)
            barrier.wait()  # nobody overwrites a slot before both read
            return both

        return all_gather

    layouts = [Layout(rank=r, world=2, rows=6) for r in (0, 1)]
    ranks = [Chooser(range(20), 0, 4, curriculum=PassRateCurriculum()) for _ in (0, 1)]
    for r in (0, 1):
        ranks[r].spread(layouts[r], gather_for(r))
    seen: list[list[tuple[int, int]]] = [[], []]

    def run(rank: int) -> None:
        rng = random.Random(rank)
        for generation in range(20):
            chosen = [ranks[rank].choose() for _ in range(6)]
            resets = range(6 * generation, 6 * generation + 6)
            seen[rank].extend((t, layouts[rank].slot(r) // 4) for t, r in zip(chosen, resets))
            for task in chosen:  # each rank scores its own rows
                reward = float(rng.random() < passes[task])
                ranks[rank].observe(task, Outcome(kind="scored", reward=reward))

    threads = [threading.Thread(target=run, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    by_group: dict[int, set[int]] = {}
    for task, group in seen[0] + seen[1]:
        by_group.setdefault(group, set()).add(task)
    assert all(len(t) == 1 for t in by_group.values()), by_group  # split groups stay whole
    assert sorted(by_group) == list(range(60))
    states = []
    for chooser in ranks:  # each in its own thread: synchronize is a collective
        states.append(threading.Thread(target=chooser.synchronize))
    for t in states:
        t.start()
    for t in states:
        t.join(timeout=60)
    a, b = (c.curriculum.state_dict() for c in ranks)  # type: ignore[union-attr]
    assert a == b
    later = [by_group[g].copy().pop() for g in range(24, 60)]
    assert sum(1 for t in later if t >= 14) / len(later) > 0.6, later


def test_the_default_chooser_hands_out_the_seeded_order() -> None:
    chooser = Chooser(range(7), seed=5, group_size=3)
    assert [chooser.choose() for _ in range(90)] == _take(order(range(7), 5, 3), 90)


def test_a_curriculum_chooser_learns_each_outcome_for_its_own_group() -> None:
    """TaskSampler.observe names the task only: the chooser gives the outcome back to the
    group it chose (a task's rollouts settle in the order chosen); unscored is no outcome."""
    from orsgen.runtime.choosing.curriculum import PassRateCurriculum

    chooser = Chooser(range(5), seed=2, group_size=2, curriculum=PassRateCurriculum())
    chosen = [chooser.choose() for _ in range(6)]  # groups 0, 1, 2
    assert chosen[0::2] == chosen[1::2]
    rewards = [1.0, 0.0, None, 1.0, 0.0, 0.0]
    for task, reward in zip(chosen, rewards):
        kind = "scored" if reward is not None else "unfinished"
        chooser.observe(task, Outcome(reward=reward, kind=kind))
    chooser.observe(chosen[0], Outcome(reward=1.0, kind="scored"))  # not one it chose
    curriculum = chooser.curriculum
    assert curriculum is not None
    history = sorted(curriculum.state_dict()["history"])
    assert history == [
        [0, chosen[0], [1.0, 0.0]],
        [1, chosen[2], [None, 1.0]],
        [2, chosen[4], [0.0, 0.0]],
    ]
    state = chooser.state_dict()
    again = Chooser(range(5), seed=2, group_size=2, curriculum=PassRateCurriculum())
    again.load_state_dict(state)
    assert [again.choose() for _ in range(20)] == [chooser.choose() for _ in range(20)]

"""The runtime's seams, each with today's behaviour as its default: a task sampler that
observes settled outcomes (``sampler=``), a trajectory sink (``trajectories=`` a path or an
object with ``write``), and the rollout protocol an evaluation loop drives without TRL.
Against a real trustenv server, through the adapter a user builds."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import ors_server
import pytest
from envs.trust_support import TRUST_ENV, TrustAdapter
from uniform_passes import order

from orsgen.runtime.choosing import tasks
from orsgen.runtime.records.passk import passes
from orsgen.runtime.records.episode import Outcome, RolloutState
from orsgen.runtime.records.protocol import HasRollout
from orsgen.runtime.rewards import outcome_reward

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("fresh_runtime")]

PLACEHOLDER = {"prompt": [{"role": "user", "content": "ignored"}]}
WORDS = ["apple", "banana", "cherry", "damson", "elder", "fig"]


@pytest.fixture(autouse=True)
def _fresh_samplers() -> None:
    tasks.samplers().clear()


@pytest.fixture(scope="module")
def server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(TRUST_ENV)


class Hardest:
    """A tiny curriculum: after a task passes (by the adapter's pass threshold, which the
    factory receives) it is never chosen again."""

    made: list[Hardest] = []

    def __init__(
        self, tasks: Sequence[int], seed: int, group_size: int, pass_threshold: float
    ) -> None:
        self.left, self.pass_threshold = list(tasks), pass_threshold
        self.seen: list[tuple[int, str, float | None]] = []
        self._lock = threading.Lock()
        Hardest.made.append(self)

    def choose(self) -> int:
        with self._lock:
            return self.left[0]

    def observe(self, task_index: int, outcome: Outcome) -> None:
        with self._lock:
            self.seen.append((task_index, outcome.kind, outcome.reward))
            passed = outcome.reward is not None and passes(outcome.reward, self.pass_threshold)
            if passed and task_index in self.left:
                self.left.remove(task_index)

    def state_dict(self) -> dict[str, Any]:
        return {"left": list(self.left)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.left = list(state["left"])


def test_a_plugged_in_sampler_chooses_and_observes_every_settled_outcome(server) -> None:  # type: ignore[no-untyped-def]
    Hardest.made.clear()
    env = TrustAdapter(
        base_url=server.url, group_size=1, indices=[0, 2, 3], sampler=Hardest, pass_threshold=0.5
    )
    try:
        assert env.reset(**PLACEHOLDER) == "Call echo with the word 'apple'."
        env.echo(text="apple")
        assert outcome_reward([env]) == [1.0]
        assert outcome_reward([env]) == [1.0]  # settled once: observed once
        assert env.reset(**PLACEHOLDER) == "Call echo with the word 'cherry'."
        env.echo(text="wrong")
        assert outcome_reward([env]) == [0.0]
        assert env.reset(**PLACEHOLDER) == "Call echo with the word 'cherry'."
        env.reset(task_index=3)  # the trainer's own task: not the sampler's to observe
        env.echo(text="damson")
        outcome_reward([env])
    finally:
        env.close()
    (sampler,) = Hardest.made
    assert sampler.pass_threshold == 0.5  # the adapter's
    assert sampler.seen == [(0, "scored", 1.0), (2, "scored", 0.0)]
    assert sampler.state_dict() == {"left": [2, 3]}


def test_the_default_sampler_resumes_from_its_state_dict() -> None:
    first = tasks.Chooser(range(5), seed=3, group_size=2)
    taken = [first.choose() for _ in range(7)]
    second = tasks.Chooser(range(5), seed=3, group_size=2)
    second.load_state_dict(first.state_dict())
    whole = list(itertools.islice(order(range(5), 3, 2), 14))
    assert taken + [second.choose() for _ in range(7)] == whole
    with pytest.raises(ValueError, match="another seed"):
        tasks.Chooser(range(5), seed=4, group_size=2).load_state_dict(first.state_dict())


def test_a_sampler_that_is_not_callable_is_refused() -> None:
    with pytest.raises(TypeError, match="sampler must be a callable"):
        TrustAdapter(base_url="http://127.0.0.1:9/", sampler=3)  # type: ignore[arg-type]


def test_a_factory_without_the_pass_threshold_is_refused_at_construction() -> None:
    """An earlier orsgen's 3-argument factory is refused when the adapter is built, saying
    what to add, not at the first reset with a bare TypeError."""

    def three(among: Sequence[int], seed: int, group_size: int) -> tasks.Chooser:
        return tasks.Chooser(among, seed, group_size)

    with pytest.raises(TypeError, match="needs a fourth, pass_threshold"):
        TrustAdapter(base_url="http://127.0.0.1:9/", sampler=three)  # type: ignore[arg-type]


class ListSink:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def write(self, line: dict[str, Any]) -> None:
        self.lines.append(line)


def test_trajectories_go_to_any_sink_once_per_rollout(server) -> None:  # type: ignore[no-untyped-def]
    sink = ListSink()
    env = TrustAdapter(base_url=server.url, prefetch=False, trajectories=sink)
    try:
        env.reset(task_index=0)
        env.echo(text="apple")
        outcome_reward([env])
        env.reset(task_index=2)  # the first rollout was written when it settled
        env.reset(task_index=3)  # the second, unsettled, is written when the next begins
    finally:
        env.close()
    assert [(r["task_index"], r["outcome"], r["reward"]) for r in sink.lines] == [
        (0, "scored", 1.0),
        (2, "unfinished", None),
    ]
    assert sink.lines[0]["calls"][0]["tool"] == "echo"


def test_a_sink_without_write_is_refused() -> None:
    with pytest.raises(TypeError, match="trajectories must be a path or a sink"):
        TrustAdapter(base_url="http://127.0.0.1:9/", trajectories=object())  # type: ignore[arg-type]


def test_an_episode_runs_without_trl_through_the_rollout_protocol(server) -> None:  # type: ignore[no-untyped-def]
    """What an evaluation loop does: reset, call tools, settle, read the outcome."""
    env = TrustAdapter(base_url=server.url, prefetch=False, unfinished_reward=-1.0)
    try:
        assert isinstance(env, HasRollout)
        before = env.rollout
        assert before.state is RolloutState.OPENING and before.task_index is None
        env.reset(task_index=2, difficulty="ignored-row-column")
        rollout = env.rollout
        assert rollout is not before  # one rollout per reset
        assert (rollout.state, rollout.task_index, rollout.split) == (
            RolloutState.OPEN,
            2,
            "train",
        )
        env.echo(text="cherry")
        assert rollout.state is RolloutState.FINISHED and rollout.finished
        assert [c.tool for c in rollout.calls] == ["echo"] and rollout.rewards == [1.0]
        outcome = rollout.settle()
        assert (outcome.kind, outcome.reward) == ("scored", 1.0)
    finally:
        env.close()

"""The ``ors/*`` figures per environment and per tool (orsgen/runtime/records/metrics.py,
episode.py; the environment's name from trainer_facts.environment_name), on
outcomes built by hand: no server, no trainer.

- Each pooled figure is the weighted mean of its per-environment figures (by rollouts,
  calls or rewarded rollouts).
- Through ``emit`` and GRPOTrainer's own reduction over two ranks (``sum(values) /
  len(values)`` of every rank's values, ``grpo_trainer.py`` around line 2851), and through
  AsyncGRPO's ``_reduce_metric``, every figure is exact over all the rollouts.
- The per-tool keys are bounded, the same for every instance of a class.
"""

from __future__ import annotations

import functools
import random
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from envs.trust_support import TrustAdapter
from trl_standin import as_trl

from orsgen.runtime.records import metrics
from orsgen.runtime.records.episode import TIMED_OUT, Kind, Outcome
from orsgen.runtime.records.episode import MAX_TOOLS, OTHER, ToolUse, Usage, tool_keys, usage_of
from orsgen.runtime.records.metrics import Counts

ENVS = ("alpha", "beta", "gamma")
PER_ROLLOUT = ("scored_frac", "unfinished_frac", "failed_frac", "finished_frac", "pass@1")
STOP = ("stop/finished", "stop/unfinished", "stop/timeout", "stop/error")
PER_CALL = ("tool_error_frac", "env_error_frac", "model_error_frac", "tool_call_s")


@pytest.fixture(autouse=True)
def _one_environment() -> Iterator[None]:
    metrics.counts().expect(())
    metrics.counts().discard()
    yield
    metrics.counts().expect(())
    metrics.counts().discard()


def _outcome(rng: random.Random, env: str | None) -> Outcome:
    kind: Kind = rng.choice(["scored", "scored", "unfinished", "failed"])
    tools = {
        name: ToolUse(calls, rng.randint(0, calls), rng.random() * calls)
        for name in ("look", "say")
        for calls in [rng.randint(0, 3)]
    }
    failed = sum(t.failed for t in tools.values())
    usage = Usage(
        resets=1,
        reset_seconds=rng.random(),
        calls=sum(t.calls for t in tools.values()),
        failed_calls=failed,
        env_failed_calls=rng.randint(0, failed),
        call_seconds=sum(t.seconds for t in tools.values()),
        tools=tools,
    )
    reward = rng.choice([0.0, 0.5, 1.0]) if kind == "scored" else None
    return Outcome(reward, kind, finished=rng.random() < 0.5, usage=usage, environment=env)


def _batch(seed: int, n: int, envs: Sequence[str]) -> list[Outcome]:
    rng = random.Random(seed)
    return [_outcome(rng, rng.choice(list(envs))) for _ in range(n)]


def _weighted(values: dict[str, float], figure: str, weight: Callable[[str], float]) -> float:
    """The mean of ``ors/<env>/<figure>`` over the environments, weighted by ``weight``."""
    used = [e for e in ENVS if weight(e) > 0]
    total = sum(weight(e) for e in used)
    return sum(weight(e) * values[f"ors/{e}/{figure}"] for e in used) / total


def _check_pooled_is_weighted(values: dict[str, float]) -> None:
    share = lambda e: values[f"ors/{e}/rollout_frac"]  # noqa: E731
    calls = lambda e: share(e) * values.get(f"ors/{e}/calls_per_rollout", 0.0)  # noqa: E731
    rewarded = lambda e: share(e) * values.get(f"ors/{e}/scored_frac", 0.0)  # noqa: E731
    assert sum(share(e) for e in ENVS) == pytest.approx(1.0)
    for figure in (*PER_ROLLOUT, *STOP, "calls_per_rollout", "reset_s"):
        assert values[f"ors/{figure}"] == pytest.approx(_weighted(values, figure, share)), figure
    for figure in PER_CALL:
        assert values[f"ors/{figure}"] == pytest.approx(_weighted(values, figure, calls)), figure
    # Only scored rollouts have a reward here (no unfinished_reward).
    assert values["ors/reward_mean"] == pytest.approx(_weighted(values, "reward_mean", rewarded))


def _passed(batch: Sequence[Outcome]) -> list[bool]:
    return [o.reward is not None and o.reward >= 1.0 for o in batch]


def test_each_pooled_figure_is_the_weighted_mean_of_the_environments() -> None:
    batch = _batch(0, 60, ENVS)
    values = Counts.of(batch, _passed(batch), ENVS).values()
    _check_pooled_is_weighted(values)
    # The per-tool figures are the environments' own; the pooled ones have none.
    assert not any(k.startswith("ors/tool/") for k in values)
    for env in ENVS:
        mine = [o for o in batch if o.environment == env]
        calls = sum(o.usage.tools["look"].calls for o in mine)
        failed = sum(o.usage.tools["look"].failed for o in mine)
        assert values[f"ors/{env}/tool/look/calls_per_rollout"] == calls / len(mine)
        assert values[f"ors/{env}/tool/look/error_frac"] == pytest.approx(failed / calls)
        assert values[f"ors/{env}/rollouts"] == len(mine)
    assert values["ors/rollouts"] == 60


def test_the_stop_fractions_say_why_each_environments_rollouts_ended() -> None:
    # (outcome, why it ended as the adapter knows it): the environment ended the episode; the
    # trainer ended it first; rollout_timeout passed; the environment failed.
    ended = [
        (Outcome(1.0, "scored", finished=True, environment="alpha"), "finished"),
        (Outcome(None, "unfinished", "no tool call", environment="alpha"), "unfinished"),
        (Outcome(None, "unfinished", TIMED_OUT, finished=True, environment="beta"), "timeout"),
        (Outcome(None, "failed", "lost_session", finished=True, environment="beta"), "error"),
        (Outcome(0.0, "scored", finished=True, environment="beta"), "finished"),
        (Outcome(None, "failed", "tool_raised", environment="beta"), "error"),
    ]
    batch = [outcome for outcome, _ in ended]
    logged: dict[str, list[float]] = {}
    metrics.counts().expect(("alpha", "beta"))
    metrics.emit(lambda k, v: logged.setdefault(k, []).append(v), batch, [1.0] * len(batch))
    values = _trl_reduce([logged])
    for env in ("alpha", "beta", None):
        mine = [why for outcome, why in ended if env in (None, outcome.environment)]
        prefix = "ors/" if env is None else f"ors/{env}/"
        for why in ("finished", "unfinished", "timeout", "error"):
            assert values[f"{prefix}stop/{why}"] == mine.count(why) / len(mine), (env, why)
            assert len(logged[f"{prefix}stop/{why}"]) == len(mine)  # once per rollout


def test_one_environment_logs_the_tools_at_the_top_and_nothing_per_environment() -> None:
    batch = _batch(1, 10, [None])  # type: ignore[list-item]
    values = Counts.of(batch, _passed(batch)).values()
    assert "ors/tool/look/calls_per_rollout" in values and "ors/tool/say/call_s" in values
    pooled = ("ors/tool/", "ors/stop/")
    assert not any(k.count("/") > 1 and not k.startswith(pooled) for k in values), values


def _trl_reduce(ranks: Sequence[dict[str, list[float]]]) -> dict[str, float]:
    """GRPOTrainer's flush of ``log_metric`` values (grpo_trainer.py around line 2851): per
    name in the union of the ranks' names, the sum and the count of every rank's values."""
    out: dict[str, float] = {}
    for name in sorted({k for rank in ranks for k in rank}):
        total = sum(sum(rank.get(name, [])) for rank in ranks)
        count = sum(len(rank.get(name, [])) for rank in ranks)
        out[name] = total / count
    return out


def test_two_ranks_through_log_metric_give_every_figure_over_all_rollouts() -> None:
    # Rank 1 ran no gamma rollout: it still logs gamma's share (0), so the weights hold.
    batches = [_batch(2, 24, ENVS), _batch(3, 24, ENVS[:2])]
    metrics.counts().expect(ENVS)
    ranks: list[dict[str, list[float]]] = []
    for batch in batches:
        pending: dict[str, list[float]] = {}
        metrics.emit(lambda k, v: pending.setdefault(k, []).append(v), batch, [1.0] * len(batch))
        ranks.append(pending)
    assert ranks[1]["ors/gamma/rollout_frac"] == [0.0] * 24
    logged = _trl_reduce(ranks)
    every = [o for batch in batches for o in batch]
    exact = Counts.of(every, _passed(every), ENVS).values()
    for name, value in exact.items():
        if name.endswith("/rollouts"):  # a count per rank, averaged over the ranks
            assert logged[name] == pytest.approx(value / 2), name
        else:
            assert logged[name] == pytest.approx(value), name
    _check_pooled_is_weighted(logged)


def _calls(calls: int, failed: int, seconds: float) -> Outcome:
    usage = Usage(resets=1, calls=calls, failed_calls=failed, call_seconds=seconds)
    return Outcome(1.0, "scored", finished=True, usage=usage)


def test_grpotrainer_logs_the_mean_of_per_generation_figures() -> None:
    """What metrics.py says TRL's GRPOTrainer.log() (its own code) does with a log of two
    generations: each generation's figure exact, then their unweighted mean."""
    pytest.importorskip("trl")
    from transformers import TrainerState
    from trl import GRPOTrainer

    generations = [[_calls(1, 1, 4.0)], [_calls(9, 0, 0.9), _calls(0, 0, 0.0)]]
    trainer: Any = GRPOTrainer.__new__(GRPOTrainer)  # what log() reads, and no more
    trainer.model = SimpleNamespace(training=True)
    trainer._metrics = {"train": defaultdict(list)}
    trainer.accelerator = SimpleNamespace(is_main_process=False)
    trainer.log_completions = False
    trainer.state = TrainerState()
    trainer.args = SimpleNamespace(include_num_input_tokens_seen="no")
    trainer.callback_handler = SimpleNamespace(on_log=lambda *args: None)
    trainer.control = None
    for batch in generations:  # each generation's flush of log_metric (one rank)
        pending: dict[str, list[float]] = {}
        metrics.emit(lambda k, v: pending.setdefault(k, []).append(v), batch, [1.0] * len(batch))
        for name, value in _trl_reduce([pending]).items():
            trainer._metrics["train"][name].append(value)
    trainer.log({})
    logged = trainer.state.log_history[-1]
    assert logged["ors/tool_error_frac"] == pytest.approx((1 / 1 + 0 / 9) / 2)  # not 1 / 10
    assert logged["ors/tool_call_s"] == pytest.approx((4.0 / 1 + 0.9 / 9) / 2)  # not 4.9 / 10
    assert logged["ors/calls_per_rollout"] == pytest.approx((1 / 1 + 9 / 2) / 2)  # not 10 / 3
    assert logged["ors/rollouts"] == pytest.approx((1 + 2) / 2)
    said = " ".join((metrics.__doc__ or "").split())
    assert "mean of per-generation figures" in said and "exact over a logging step" not in said


def test_asyncgrpo_rates_give_every_figure_over_all_rollouts() -> None:
    pytest.importorskip("trl")
    from trl.experimental.async_grpo.async_grpo_trainer import _reduce_metric

    acc = metrics.Accumulator()
    acc.expect(ENVS)
    batch = _batch(4, 30, ENVS)
    pushes = []
    for outcome in batch:  # get_reward() pushes one rollout's window
        acc.rollout_done(outcome, 1.0)
        pushes.append(acc.drain_rates())
    assert all("ors/gamma/rollout_frac" in push for push in pushes)
    # The trainer's log() appends each push's values under their keys, then reduces.
    names = {k for push in pushes for k, v in push.items() if isinstance(v, tuple)}
    reduced = {k: _reduce_metric(k, [p[k] for p in pushes if k in p]) for k in names}
    exact = Counts.of(batch, _passed(batch), ENVS).values()
    for name, value in exact.items():
        if not name.endswith("/rollouts"):
            assert reduced[name] == pytest.approx(value), name
    _check_pooled_is_weighted(reduced)


class _Wide:
    """An adapter class with more tools than have keys, and a hidden terminal tool."""

    TERMINAL_TOOL = ("grade", "answer")
    WIRE_NAMES = {f"t{i:02d}": (f"wire-{i:02d}", {}) for i in range(20)}


for _i in range(20):
    setattr(_Wide, f"t{_i:02d}", lambda self: None)


class _Call:
    def __init__(self, tool: str, failure: str | None = None) -> None:
        self.tool, self.failure, self.seconds, self.environment_failed = tool, failure, 0.5, True


def test_the_tool_keys_are_bounded_and_the_rest_count_as_other() -> None:
    keys = tool_keys(_Wide)
    assert keys == (*[f"t{i:02d}" for i in range(MAX_TOOLS)], OTHER)
    calls = [_Call("wire-00"), _Call("wire-00", "tool_raised"), _Call("wire-17"), _Call("grade")]
    used = usage_of(True, 0.1, calls, _Wide)
    assert set(used.tools) == set(keys)  # every key, called or not: each rank logs them all
    assert used.tools["t00"] == ToolUse(2, 1, 1.0)
    assert used.tools[OTHER] == ToolUse(2, 0, 1.0)  # t17 and the terminal tool
    assert used.tools["t05"] == ToolUse()
    assert tool_keys(TrustAdapter) == ("echo", "hint")


def test_an_adapter_built_by_a_dict_factory_knows_its_name() -> None:
    make = functools.partial(TrustAdapter, base_url="http://127.0.0.1:9")  # no I/O here
    trainer = as_trl().Factories(
        {"left": make, "right": lambda: TrustAdapter(base_url="http://127.0.0.1:9")}
    )
    left, right = trainer.build("left"), trainer.build("right")
    assert metrics.counts().environments == ("left", "right")
    assert left.rollout.outcome().environment == "left"
    assert right.rollout.outcome().environment == "right"
    # One environment (TRL's {None: factory}) has no per-environment figures, and a new run
    # forgets the last one's environments.
    alone = as_trl().Factories({None: make}).build(None)
    assert alone.rollout.outcome().environment is None
    assert metrics.counts().environments == ()
    assert make().rollout.outcome().environment is None  # built outside a trainer

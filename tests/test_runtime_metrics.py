"""Rollout health metrics (orsgen/runtime/records/metrics.py): counted per process, drained per
logging step through TRL's ``log_metric`` (GRPOTrainer) or as (num, den) rates that
AsyncGRPO's own ``_reduce_metric`` reduces. Real trustenv sessions."""

from __future__ import annotations

import warnings

import ors_server
import pytest
from conftest import failed
from envs.trust_support import TRUST_ENV, TrustAdapter

from orsgen.runtime.records import metrics
from orsgen.runtime.records.episode import Outcome
from orsgen.runtime.records.episode import Usage
from orsgen.runtime.rewards import outcome_reward

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("fresh_runtime")]


@pytest.fixture(scope="module")
def server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(TRUST_ENV)


@pytest.fixture(autouse=True)
def _empty_window() -> None:
    metrics.counts().drain()


def _batch(url: str) -> list[TrustAdapter]:
    """Four rollouts: scored, scored 0.0, a grader crash, hints only (unfinished)."""
    envs = [TrustAdapter(base_url=url, prefetch=False) for _ in range(4)]
    envs[0].reset(task_index=0)
    envs[0].echo(text="apple")
    envs[1].reset(task_index=2)
    envs[1].echo(text="pear")
    envs[2].reset(task_index=1)
    failed(envs[2].echo, text="banana")
    envs[3].reset(task_index=3)
    envs[3].hint()
    failed(envs[3]._call, "echo", {"text": 7})  # the model's mistake
    return envs


def test_outcome_reward_logs_the_batch_health(server) -> None:  # type: ignore[no-untyped-def]
    envs = _batch(server.url)
    logged: dict[str, list[float]] = {}
    try:
        rewards = outcome_reward(envs, log_metric=lambda k, v: logged.setdefault(k, []).append(v))
    finally:
        for env in envs:
            env.close()
    assert rewards == [1.0, 0.0, None, None]
    one = {k: v[0] for k, v in logged.items()}
    # A figure over rollouts is logged once per rollout and one over calls once per call
    # (TRL's mean over the ranks then weighs each rank's batch by them); counts and gauges
    # once.
    assert all(len(set(v)) == 1 for v in logged.values()), logged
    assert len(logged["ors/scored_frac"]) == 4 and len(logged["ors/reset_s"]) == 4
    assert len(logged["ors/tool_error_frac"]) == 5 and len(logged["ors/reward_mean"]) == 2
    assert len(logged["ors/tool/echo/error_frac"]) == 4 and len(logged["ors/tool/hint/call_s"]) == 1
    assert len(logged["ors/rollouts"]) == 1 and len(logged["ors/open_sessions"]) == 1
    assert one["ors/rollouts"] == 4.0
    assert one["ors/scored_frac"] == 0.5
    assert one["ors/unfinished_frac"] == 0.25 and one["ors/failed_frac"] == 0.25
    assert one["ors/finished_frac"] == 0.5  # the two echo answers finished their episodes
    assert one["ors/tool_error_frac"] == 2 / 5 and one["ors/env_error_frac"] == 1 / 5
    assert one["ors/model_error_frac"] == 1 / 5
    assert one["ors/calls_per_rollout"] == 5 / 4
    assert one["ors/reset_s"] > 0 and one["ors/tool_call_s"] > 0
    assert one["ors/drift"] == 0.0 and one["ors/lost_frac"] == 0.0
    assert one["ors/reward_mean"] == 0.5 and one["ors/pass@1"] == 0.25
    # Per tool: echo 4 calls (a grader crash, the model's bad argument), hint 1.
    assert one["ors/tool/echo/calls_per_rollout"] == 1.0 and one["ors/tool/echo/error_frac"] == 0.5
    assert one["ors/tool/hint/calls_per_rollout"] == 0.25 and one["ors/tool/hint/error_frac"] == 0
    assert one["ors/tool/echo/call_s"] > 0 and one["ors/tool/hint/call_s"] > 0
    assert not any(k.startswith("ors/tool/_other") for k in one)  # two tools: no _other
    assert "ors/open_sessions" in one
    # A second scoring of the same rollouts logs the same figures: they are the batch's own.
    again: dict[str, float] = {}
    outcome_reward(envs, log_metric=again.__setitem__)
    assert again["ors/rollouts"] == 4.0 and again["ors/scored_frac"] == 0.5
    assert again["ors/calls_per_rollout"] == 5 / 4 and again["ors/tool_error_frac"] == 2 / 5
    assert again["ors/reset_s"] == one["ors/reset_s"]


def test_rollouts_scored_before_training_never_land_in_a_step(server) -> None:  # type: ignore[no-untyped-def]
    early = _batch(server.url)  # e.g. a user's own probes before trainer.train()
    try:
        outcome_reward(early)  # no log_metric: counted in the window, never logged
        env = TrustAdapter(base_url=server.url, prefetch=False)
        env.reset(task_index=0)
        env.echo(text="apple")
        step: dict[str, float] = {}
        outcome_reward([env], log_metric=step.__setitem__)
        env.close()
    finally:
        for e in early:
            e.close()
    assert step["ors/rollouts"] == 1.0 and step["ors/scored_frac"] == 1.0


def test_rates_reduce_like_asyncgrpo_logs_them() -> None:
    pytest.importorskip("trl")
    from trl.experimental.async_grpo.async_grpo_trainer import _reduce_metric

    acc = metrics.Accumulator()
    pushes = []
    for kind in ("scored", "scored", "failed"):
        failed = int(kind == "failed")
        used = Usage(calls=1, failed_calls=failed, env_failed_calls=failed, call_seconds=0.2)
        acc.rollout_done(
            Outcome(None, kind, finished=kind == "scored", usage=used)  # type: ignore[arg-type]
        )
        pushes.append(acc.drain_rates())
    acc.rollout_done(Outcome(None, "unfinished"))
    pushes.append(acc.drain_rates())
    # The trainer's log() appends each push's values under their keys, then reduces; a rate
    # over nothing (the last rollout made no call) is not pushed.
    assert "ors/tool_call_s" not in pushes[-1] and pushes[-1]["ors/scored_frac"] == (0.0, 1.0)
    reduced = {k: _reduce_metric(k, [p[k] for p in pushes if k in p]) for k in pushes[0]}
    assert (
        reduced["ors/scored_frac"] == 0.5
    )  # 2 of 4 rollouts over four pushes, not a mean of means
    assert reduced["ors/env_error_frac"] == 1 / 3
    assert abs(reduced["ors/tool_call_s"] - 0.2) < 1e-9


def test_the_counts_are_the_processs_own() -> None:
    from orsgen.runtime.transport.process import current

    # A process part: a forked child's fresh process starts from zero (process.py).
    assert metrics.counts() is current().part(metrics.Accumulator)
    metrics.counts().rollout_done(Outcome(None, "unfinished", usage=Usage(1, 1.0)))
    assert metrics.counts().drain()["ors/reset_s"] == 1.0
    assert "ors/reset_s" not in metrics.counts().drain()


def test_drift_counts_the_rollouts_whose_task_drifted(rules_pkg, rules_server) -> None:  # type: ignore[no-untyped-def]
    """``ors/drift`` is the share of the batch's rollouts on a task whose live tools
    differ from the snapshot, not a process-wide flag that stays 1.0 once set."""
    from orsgen.runtime.sessions.drift import ToolDriftWarning

    envs = [rules_pkg.RulesEnv(base_url=rules_server.url, prefetch=False) for _ in range(2)]
    steps: list[dict[str, float]] = [{}, {}, {}]
    try:
        with pytest.warns(ToolDriftWarning, match="only_two"):
            envs[0].reset(task_index=2)  # task 2 has a tool the snapshot's probe never saw
        envs[1].reset(task_index=0)
        outcome_reward(envs[:1], log_metric=steps[0].__setitem__)
        outcome_reward(envs[1:], log_metric=steps[1].__setitem__)
        outcome_reward(envs, log_metric=steps[2].__setitem__)
    finally:
        for env in envs:
            env.close()
    assert [step["ors/drift"] for step in steps] == [1.0, 0.0, 0.5]


def test_a_failing_gauge_warns_once_and_the_others_stay() -> None:
    """``ors/curriculum/*`` and the other gauges are read at every drain: one that raises
    is left out with one warning naming it, not silently, and not once per step."""
    name = "ors/test/failing_gauge"

    def broken() -> float:
        raise RuntimeError("the owner is gone")

    metrics.gauge(name, broken)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first, second = metrics.counts().drain(), metrics.counts().drain()
        assert name not in first and name not in second
        assert "ors/open_sessions" in first and "ors/open_sessions" in second
        said = [str(w.message) for w in caught if name in str(w.message)]
        assert said == [
            f"metric {name} is left out of the log: reading it failed " "(the owner is gone)"
        ], said
    finally:
        metrics._gauges.pop(name, None)

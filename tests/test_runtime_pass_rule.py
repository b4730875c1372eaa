"""One pass rule (issue 29, item 1): ``passk.passes(reward, threshold)`` with one threshold,
the adapter's ``pass_threshold`` (the class's ``PASS_THRESHOLD`` by default), read by the
pass-rate curriculum's pools, ``ors/pass@k``, the per-task table and the trajectory lines'
table. A task that scores 0.6 every time is passed by all of them or by none.

Rewards come from a real server: ``score(value)`` in tests/envs/rules_env.py returns
exactly ``value``; the adapter is the generated package's, choosing its task itself
(``train_dataset=None``) with ``curriculum="pass_rate"``."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from orsgen.runtime.records import passk
from orsgen.runtime.choosing import tasks
from orsgen.runtime.config import AdapterConfig
from orsgen.runtime.trajectories import task_table, writer as trajectories
from orsgen.runtime.trajectories.reader import fold
from orsgen.runtime.trajectories.task_table import TaskTable

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("fresh_runtime")]

PLACEHOLDER = {"prompt": [{"role": "user", "content": ""}]}  # TRL's row with no dataset


def test_passes_is_the_rule() -> None:
    assert passk.passes(1.0, 1.0) and passk.passes(0.6, 0.5)
    assert not passk.passes(0.6, 1.0) and not passk.passes(None, -10.0)
    assert passk.grouped_pass_at_k(["a", "a"], [0.6, 0.6], [0.5, 0.5]) == {1: 1.0, 2: 1.0}
    assert passk.grouped_pass_at_k(["a", "a"], [0.6, 0.6]) == {1: 0.0, 2: 0.0}


def _one_rollout(pkg: Any, url: str, out: Path, **keywords: Any) -> dict[str, Any]:
    """One chosen task scored 0.6; what each reader made of it."""
    tasks.samplers().clear()
    task_table.table().clear()
    lines = out / "lines.jsonl"
    env = pkg.RulesEnv(
        base_url=url,
        group_size=1,
        indices=[0],
        curriculum="pass_rate",
        trajectories=str(lines),
        **keywords,
    )
    logged: dict[str, list[float]] = {}
    try:
        env.reset(**PLACEHOLDER)
        env.score(value=0.6)
        pkg.outcome_reward(
            [env],
            log_metric=lambda k, v: logged.setdefault(k, []).append(v),
            trainer_state=SimpleNamespace(global_step=0),
            task_index=[env.rollout.task_index],
            split=[env.rollout.split],
        )
    finally:
        env.close()
        trajectories.writers().close()
    (chooser,) = tasks.samplers().all()
    assert isinstance(chooser, tasks.Chooser) and chooser.curriculum is not None
    from_lines = TaskTable()
    fold(from_lines, [json.loads(x) for x in lines.read_text().splitlines()], 1)
    return {
        "pool": chooser.curriculum.pool(0),
        "pass@1": logged["ors/pass@1"],
        "table": task_table.table().rows()[0]["pass_rate"],
        "lines": from_lines.rows()[0]["pass_rate"],
    }


def test_every_reader_judges_by_the_adapters_threshold(  # type: ignore[no-untyped-def]
    rules_pkg, rules_server, tmp_path: Path
) -> None:
    default = _one_rollout(rules_pkg, rules_server.url, tmp_path / "default")
    # Full marks by default: 0.6 fails everywhere (the curriculum said "solved" before).
    assert default == {"pool": "unsolved", "pass@1": [0.0], "table": 0.0, "lines": 0.0}
    lenient = _one_rollout(rules_pkg, rules_server.url, tmp_path / "half", pass_threshold=0.5)
    assert lenient == {"pool": "solved", "pass@1": [1.0], "table": 1.0, "lines": 1.0}


def test_the_threshold_is_the_classs_setting(rules_pkg) -> None:  # type: ignore[no-untyped-def]
    cls = rules_pkg.RulesEnv
    assert cls.PASS_THRESHOLD == passk.PASS_THRESHOLD
    assert AdapterConfig.of(cls, base_url="http://127.0.0.1:9").pass_threshold == 1.0
    lenient = type("Lenient", (cls,), {"PASS_THRESHOLD": 0.25})
    assert AdapterConfig.of(lenient, base_url="http://127.0.0.1:9").pass_threshold == 0.25
    given = AdapterConfig.of(lenient, base_url="http://127.0.0.1:9", pass_threshold=0.75)
    assert given.pass_threshold == 0.75
    with pytest.raises(ValueError, match="pass_threshold must be finite"):
        cls(base_url="http://127.0.0.1:9", pass_threshold=float("nan"))
    with pytest.raises(TypeError, match="pass_threshold must be a number"):
        cls(base_url="http://127.0.0.1:9", pass_threshold="high")

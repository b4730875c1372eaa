"""What the trainer shows, where users look (issue 23), from one real GRPOTrainer run on
CPU with the generated echo package's ``outcome_reward`` (tests/grpo_visibility_run.py,
in its own process):

- ``report_to="trackio"``: the ``ors/*`` metrics reach trackio's local store, read back
  through ``trackio.Api()`` and its SQLite logs, with no connection beyond loopback;
- ``log_completions=True``: every completion's task index and split are columns of the
  completions parquet files (through TRL's ``log_extra``);
- ``TaskTableCallback``: a per-task table beside the run's output that agrees with those
  parquet files;
- ``trajectories=``: the trajectory file, which ``orsgen replay`` replays against the same
  environment with no change, and against a changed grader (tests/envs/echo_regraded_env.py)
  with exit 1.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import ors_server

ROOT = Path(__file__).resolve().parents[1]
ECHO_ENV = ROOT / "examples" / "echo_env.py"
REGRADED_ENV = ROOT / "tests" / "envs" / "echo_regraded_env.py"

pytest.importorskip("trl")
pytest.importorskip("trackio")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def run(ors_servers: ors_server.Servers, tmp_path_factory: pytest.TempPathFactory) -> Any:
    server = ors_servers.own(ECHO_ENV)
    work = tmp_path_factory.mktemp("visibility")
    env = dict(os.environ, TRACKIO_DIR=str(work / "trackio"), HF_HUB_OFFLINE="1")
    env.pop("TRACKIO_SPACE_ID", None)
    env.pop("TRACKIO_SERVER_URL", None)
    with ThreadPoolExecutor(1) as pool:  # the changed grader's server starts while it trains
        regraded = pool.submit(ors_servers.own, REGRADED_ENV)
        proc = subprocess.run(
            [sys.executable, str(ROOT / "tests" / "grpo_visibility_run.py"), server.url, str(work)],
            env=env,
            capture_output=True,
            text=True,
            timeout=540,
        )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    result = json.loads((work / "result.json").read_text())
    return work, result, {"same": server.url, "regraded": regraded.result().url}


def _steps(history: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {h["step"]: h for h in history if "ors/scored_frac" in h}


def test_ors_metrics_reach_trackio_without_the_network(run: Any) -> None:
    work, result, _urls = run
    assert result["refused"] == []
    assert (work / "trackio").is_dir()  # the store is where TRACKIO_DIR says
    assert result["trackio_runs"] == ["visibility"]
    logged = _steps(result["log_history"])
    assert sorted(logged) == [1, 2, 3], result["log_history"]
    shown = {
        e["train/global_step"]: e for e in result["trackio_logs"] if "train/ors/scored_frac" in e
    }
    assert sorted(shown) == [1, 2, 3], result["trackio_logs"]
    for step, entry in logged.items():
        ors = {k: v for k, v in entry.items() if k.startswith("ors/")}
        assert {"ors/scored_frac", "ors/calls_per_rollout", "ors/drift", "ors/rollouts"} <= set(ors)
        for key, value in ors.items():
            assert shown[step][f"train/{key}"] == pytest.approx(value), (step, key)


def _completions(work: Path) -> list[dict[str, Any]]:
    import pandas as pd

    files = sorted((work / "out" / "completions").glob("*.parquet"))
    assert files, "log_completions wrote no parquet file"
    frame = pd.concat([pd.read_parquet(f) for f in files])
    return frame.to_dict("records")  # type: ignore[no-any-return]


def test_the_completions_table_names_each_rollouts_task(run: Any) -> None:
    work, result, _urls = run
    rows = _completions(work)
    assert len(rows) == 3 * 2  # 3 steps of one group of 2
    assert {r["task_split"] for r in rows} == {"train"}
    # TRL's dataset order: each group of two completions is one task of the split.
    for step in (1, 2, 3):
        tasks = [r["task_index"] for r in rows if r["step"] == step]
        assert len(tasks) == 2 and tasks[0] == tasks[1] and 0 <= tasks[0] < 4, rows


def test_the_trajectories_name_each_rollouts_task(run: Any) -> None:
    work, _result, _urls = run
    lines = (work / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    rows = _completions(work)
    assert {r["split"] for r in records} == {"train"}
    assert Counter(r["task_index"] for r in records) == Counter(r["task_index"] for r in rows)


def test_the_task_table_agrees_with_the_completions(run: Any) -> None:
    work, _result, _urls = run
    rows = _completions(work)
    with (work / "out" / "ors_tasks.csv").open(encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    per_task = Counter(int(r["task_index"]) for r in rows)
    assert {int(t["task_index"]): int(t["rollouts"]) for t in table} == dict(per_task)
    for task in table:
        index = int(task["task_index"])
        mine = [r for r in rows if r["task_index"] == index]
        assert int(task["last_step"]) == max(r["step"] for r in mine)
        rewards = [r["outcome_reward"] for r in mine if r["outcome_reward"] == r["outcome_reward"]]
        assert int(task["scored"]) == len(rewards)
        if rewards:
            passed = sum(1 for r in rewards if r >= 1.0) / len(rewards)
            assert float(task["pass_rate"]) == pytest.approx(passed)
            assert float(task["mean_reward"]) == pytest.approx(sum(rewards) / len(rewards))


def test_the_trajectory_file_replays_unchanged_and_a_changed_grader_exits_1(
    run: Any, orsgen_cli: Any
) -> None:
    work, _result, urls = run
    trajectories = work / "trajectories.jsonl"
    lines = [json.loads(line) for line in trajectories.read_text(encoding="utf-8").splitlines()]
    # The rollouts that called echo: the inverted grader changes each of them.
    called = sum(1 for line in lines if any(c["tool"] == "echo" for c in line["calls"]))
    # In this process (no SDK import per replay): a second or two.
    replays = {
        name: orsgen_cli(
            ["replay", str(trajectories), "--out", str(work / name), "--base-url", url]
        )
        for name, url in urls.items()
    }
    assert replays["same"].code == 0, replays["same"].stderr
    s = json.loads((work / "same" / "summary.json").read_text())
    assert (s["rollouts"], s["changed"], s["outputs_changed"]) == (len(lines), 0, 0), s
    assert s["replayed"] == len(lines) - len(s["skipped"]) and s["kind"] == "replay"
    assert replays["regraded"].code == 1, replays["regraded"].stderr
    assert "the environment's behaviour changed" in replays["regraded"].stderr
    s = json.loads((work / "regraded" / "summary.json").read_text())
    assert called and s["changed"] == called and s["outputs_changed"] == 0, s

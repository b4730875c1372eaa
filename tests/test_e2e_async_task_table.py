"""The per-task table under TRL's AsyncGRPO rollout loop (issue 23, item 3).

AsyncGRPO scores each rollout in its spawned rollout child through the generated
``Scored<Env>.get_reward()``, where the trainer process's own table never sees it. With
``trajectories=PATH`` on the adapter and ``TaskTableCallback(trajectories=PATH)`` on the
trainer, the callback reads the child's trajectory lines at each logging step.

Here: a package generated from coinechoenv's server (tasks 0-6 always pass, 7-13 never,
14-19 half the time, drawn by the server, which keeps a ledger of every graded echo); the
child started as ``AsyncRolloutWorker.start()`` does (tests/async_child.py) with
``functools.partial(ScoredCoinEchoEnv, base_url=..., trajectories=PATH)``; the callback's
``on_log`` driven with transformers' own ``TrainingArguments``, ``TrainerState`` and
``TrainerControl`` while the child runs (one step per 8 samples), then ``on_train_end``.
The table must equal what the trajectory lines say, and every rollout it counts must be
one the server graded, on that task, with that reward.
"""

from __future__ import annotations

import csv
import functools
import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

import ors_server
from conftest import generate_and_import

pytest.importorskip("trl")
pytest.importorskip("tokenizers")
pytest.importorskip("aiohttp")

import tiny_model  # noqa: E402  (examples/, on sys.path via conftest)
from transformers import TrainerControl, TrainerState, TrainingArguments  # noqa: E402

from async_child import run_rollouts  # noqa: E402
from envs.coin_echo_support import COIN_ECHO_ENV  # noqa: E402
from orsgen.runtime.task_callback import TaskTableCallback  # noqa: E402

NUM_GENERATIONS = 4
MAX_INFLIGHT = 4  # rollouts in flight at once: at most this many graded, never settled
GROUPS_WANTED = 24  # more than one seeded pass over the 20 tasks
SAMPLES_PER_STEP = 8
WORD = re.compile(r"Call echo with the word 't(\d+)'")
SERIAL = re.compile(r"#(\d+)$")


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _jsonl(paths: list[Path]) -> list[dict[str, Any]]:
    return [json.loads(raw) for p in paths for raw in p.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_the_task_table_counts_the_async_childs_rollouts(
    ors_servers: ors_server.Servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = tmp_path / "server_ledger.jsonl"
    monkeypatch.setenv("COIN_LEDGER", str(ledger))  # read by the server process it starts
    server = ors_servers.own(COIN_ECHO_ENV)
    monkeypatch.delenv("COIN_LEDGER")
    trajectories = tmp_path / "runs" / "traj.jsonl"
    args = TrainingArguments(output_dir=str(tmp_path / "out"), report_to=[])
    state, control = TrainerState(), TrainerControl()
    callback = TaskTableCallback(trajectories=trajectories)
    table = tmp_path / "out" / "ors_tasks.csv"
    snapshots: list[dict[int, int]] = []  # each task's rollouts in the table at each step

    def step(samples: int) -> None:
        while samples >= (state.global_step + 1) * SAMPLES_PER_STEP:
            state.global_step += 1
            callback.on_log(args, state, control)
            snapshots.append({int(r["task_index"]): int(r["rollouts"]) for r in _csv(table)})

    try:
        pkg = generate_and_import(
            server.url, tmp_path / "coin_echo_table", class_name="CoinEchoEnv"
        )
        probe = pkg.CoinEchoEnv(base_url=server.url)
        episodes = [
            tiny_model.Episode(f"Call echo with the word 't{i}'.", {"text": f"t{i}"}, "echo")
            for i in range(20)
        ]
        tokenizer = tiny_model.build_episode_tokenizer([probe.echo], episodes, "echo")
        callback.on_train_begin(args, state, control)
        run = run_rollouts(
            functools.partial(
                pkg.ScoredCoinEchoEnv, base_url=server.url, trajectories=trajectories
            ),
            tokenizer,
            NUM_GENERATIONS,
            MAX_INFLIGHT,
            GROUPS_WANTED * NUM_GENERATIONS,
            timeout=300,
            each_poll=step,
        )
    finally:
        server.stop()
    state.global_step += 1
    callback.on_train_end(args, state, control)
    rows = _csv(table)
    snapshots.append({int(r["task_index"]): int(r["rollouts"]) for r in rows})
    totals = [sum(snapshot.values()) for snapshot in snapshots]

    # The child wrote the lines (spawned: the path as given); the table is their fold.
    files = sorted(trajectories.parent.iterdir())
    assert files == [trajectories], files
    lines = _jsonl(files)
    expected: dict[int, Counter[str]] = defaultdict(Counter)
    for line in lines:
        counts = expected[line["task_index"]]
        counts["rollouts"] += 1
        if line["outcome"] == "scored":
            counts["scored"] += 1
            counts["passed"] += line["reward"] >= 1.0
    got = {
        int(r["task_index"]): (int(r["rollouts"]), int(r["scored"]), float(r["pass_rate"]))
        for r in rows
    }
    assert got == {
        t: (c["rollouts"], c["scored"], round(c["passed"] / c["scored"], 6))
        for t, c in expected.items()
    }
    assert set(got) == set(range(20)) and all(r["split"] == "train" for r in rows)
    assert all(got[t][2] == 1.0 for t in range(7)) and all(got[t][2] == 0.0 for t in range(7, 14))
    print(f"\nasync task table: {got}; rollouts at each logging step: {totals}")

    # Each counted rollout is one the server graded, on that task, with that reward.
    graded = {e["serial"]: e for e in _jsonl([ledger])}
    serials = [int(SERIAL.search(line["calls"][-1]["output"]).group(1)) for line in lines]  # type: ignore[union-attr]
    assert len(set(serials)) == len(serials)
    for line, serial in zip(lines, serials):
        assert (graded[serial]["task"], graded[serial]["reward"]) == (
            line["task_index"],
            line["reward"],
        )
    assert 0 <= len(graded) - len(serials) <= MAX_INFLIGHT, (len(graded), len(serials))

    # The table filled while the child ran; a task's last step is the step at which its
    # last line was first read (snapshot k is the table at global_step k + 1).
    assert len(totals) >= 4 and totals == sorted(totals) and totals[0] > 0, totals
    for task, row in got.items():
        first_whole = next(k for k, snap in enumerate(snapshots) if snap.get(task) == row[0])
        assert int(next(r for r in rows if int(r["task_index"]) == task)["last_step"]) == (
            first_whole + 1
        ), (task, snapshots)
    # Every sample the trainer would get is in the table.
    per_task = Counter(int(WORD.findall(s.prompt[-1]["content"])[-1]) for s in run.samples)
    assert all(got[t][0] >= n for t, n in per_task.items()), (per_task, got)

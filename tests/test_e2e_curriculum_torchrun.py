"""Environment-owned data on two processes: ``torchrun --nproc_per_node 2`` on CPU (gloo),
both ranks against ONE real coinenv server, through the generated package
(tests/curriculum_ranks.py). Six rows per rank and groups of four, so every step has a
group split across the ranks.

- every GRPO group stays whole on one task, the split one included (the ranks place
  their resets among the global rows and choose by global group), and by default the
  order is the seeded uniform passes of one process;
- with ``curriculum="pass_rate"`` both ranks end with the same curriculum state (they
  exchange outcomes at each generation's first reset), and after the first pass over the
  20 tasks the groups go mostly to tasks solved about half the time.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import ors_server

ROOT = Path(__file__).resolve().parents[1]
COIN_ENV = ROOT / "bench" / "coin_env.py"
RANKS = ROOT / "tests" / "curriculum_ranks.py"
STEPS, GROUP = 12, 4

pytest.importorskip("trl")
pytest.importorskip("tokenizers")

import tiny_model  # noqa: E402  (examples/, on sys.path via conftest)

from conftest import import_generated  # noqa: E402
from torchrun_launch import run_two_ranks  # noqa: E402
from uniform_passes import group_task  # noqa: E402


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("curriculum", ["uniform", "pass_rate"])
def test_two_ranks_keep_groups_whole_and_agree(
    ors_servers: ors_server.Servers, tmp_path: Path, curriculum: str
) -> None:
    server = ors_servers.own(COIN_ENV)
    probe = import_generated(ROOT / "bench" / "coinenv").CoinEnv(base_url=server.url)
    model = tiny_model.build_untrained_model(
        tmp_path / "tiny",
        tools=[probe.note],
        episodes=[tiny_model.Episode("Task 0: answer in one word.", {"text": "x"}, "noted")],
        tool_name="note",
    )
    out, log = tmp_path / "results", tmp_path / "torchrun.log"
    pythonpath = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    args = [
        "--base-url", server.url, "--out", str(out), "--model", str(model),
        "--steps", str(STEPS), "--curriculum", curriculum,
    ]  # fmt: skip
    code, output = run_two_ranks(RANKS, args, log, env={"PYTHONPATH": pythonpath})
    assert code == 0, output[-6000:]
    ranks = [json.loads((out / f"rank-{r}.json").read_text()) for r in (0, 1)]
    assert [len(r["steps"]) for r in ranks] == [STEPS, STEPS], ranks
    chosen = []
    for step in range(STEPS):
        rows = ranks[0]["steps"][step] + ranks[1]["steps"][step]  # the global order
        assert len(rows) == 12, rows
        groups = [rows[i : i + GROUP] for i in range(0, 12, GROUP)]
        assert all(len(set(g)) == 1 for g in groups), (step, rows)
        chosen += [g[0] for g in groups]
    if curriculum == "uniform":  # the seeded passes, by global group (seed 0, the config's)
        assert chosen == [group_task(range(20), 0, g) for g in range(len(chosen))]
        assert ranks[0]["states"] == ranks[1]["states"] == []
        return
    # Both ranks hold one curriculum, in the same state.
    assert len(ranks[0]["states"]) == 1 and ranks[0]["states"] == ranks[1]["states"]
    assert sorted(chosen[:20]) == list(range(20))  # the first pass: every task once
    halves = sum(1 for t in chosen[21:] if t >= 14)  # tasks 14..19 pass half the time
    assert halves / len(chosen[21:]) > 0.6, chosen

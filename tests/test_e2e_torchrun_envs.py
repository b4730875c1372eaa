"""Every ``ors/*`` figure per environment on two processes (issue 35): ``torchrun
--nproc_per_node 2`` on CPU (gloo), a real GRPOTrainer with a dict ``environment_factory``
(examples/echo_env.py and tests/envs/terminal_env.py's quiz) weighted 3:1, one block per
step (tests/envs_ranks.py). The ranks hold different mixes of the two environments, so a
plain mean of the ranks' figures would be off: each logged figure must be the one over all
the step's rollouts of that environment, on both ranks, and the pooled figure their
rollout-weighted mean."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import ors_server

ROOT = Path(__file__).resolve().parents[1]
RANKS = ROOT / "tests" / "envs_ranks.py"
QUIZ = ROOT / "tests" / "envs" / "terminal_env.py"
STEPS = 4  # the issue-35 acceptance: 4 steps

pytest.importorskip("trl")
pytest.importorskip("tokenizers")

import tiny_model  # noqa: E402  (examples/, on sys.path via conftest)
from train_echo import warm_up_episodes  # noqa: E402

from conftest import served_package  # noqa: E402
from generated.echo import EchoEnv  # noqa: E402
from generated.echo import load_tasks as echo_tasks  # noqa: E402
from torchrun_launch import run_two_ranks  # noqa: E402


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_two_ranks_log_each_environments_figures_over_both_ranks(
    ors_servers: ors_server.Servers, echo_server: ors_server.RunningServer, tmp_path: Path
) -> None:
    quiz_dir = tmp_path / "quiz_ranks"
    _quiz, quiz_server = served_package(ors_servers, QUIZ, quiz_dir)
    probe = EchoEnv(base_url=echo_server.url)  # no I/O: only its tool methods
    model = tiny_model.build_tiny_model(
        tmp_path / "tiny",
        tools=[probe.echo, probe.hint],
        episodes=warm_up_episodes(echo_server.url, echo_tasks(base_url=echo_server.url)),
        tool_name="echo",
    )
    out, log = tmp_path / "results", tmp_path / "torchrun.log"
    pythonpath = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    args = [
        "--echo-url", echo_server.url, "--quiz-url", quiz_server.url,
        "--quiz-package", str(quiz_dir), "--model", str(model), "--out", str(out),
        "--steps", str(STEPS),
    ]  # fmt: skip
    code, output = run_two_ranks(RANKS, args, log, env={"PYTHONPATH": pythonpath})
    assert code == 0, output[-6000:]
    ranks = [json.loads((out / f"rank-{r}.json").read_text()) for r in (0, 1)]
    assert [len(r["steps"]) for r in ranks] == [STEPS, STEPS], ranks
    logged = [h for h in ranks[0]["log"] if "ors/scored_frac" in h]
    assert len(logged) == STEPS, ranks[0]["log"]
    mixes = []
    for step, entry in enumerate(logged):
        rollouts = ranks[0]["steps"][step] + ranks[1]["steps"][step]
        assert len(rollouts) == 16 and all(env in ("echo", "quiz") for env, _ in rollouts)
        mixes.append([sum(env == "quiz" for env, _ in r["steps"][step]) for r in ranks])
        for env in ("echo", "quiz"):
            mine = [kind for e, kind in rollouts if e == env]
            assert len(mine) == {"echo": 12, "quiz": 4}[env], rollouts  # 3:1 over the ranks
            assert entry[f"ors/{env}/rollout_frac"] == len(mine) / 16
            assert entry[f"ors/{env}/scored_frac"] == pytest.approx(
                sum(kind == "scored" for kind in mine) / len(mine)
            ), (step, env, rollouts, entry)
            assert entry[f"ors/{env}/rollouts"] == len(mine) / 2  # a count: the ranks' mean
        assert "ors/echo/tool/echo/calls_per_rollout" in entry
        assert "ors/quiz/tool/submit/calls_per_rollout" in entry
        for figure in ("scored_frac", "failed_frac", "calls_per_rollout", "pass@1"):
            weighted = sum(
                entry[f"ors/{e}/rollout_frac"] * entry[f"ors/{e}/{figure}"]
                for e in ("echo", "quiz")
            )
            assert entry[f"ors/{figure}"] == pytest.approx(weighted), (figure, entry)
    # The ranks held different mixes (seed 0: the quiz on rank 1 only): the weighting mattered.
    print(f"quiz rollouts per rank, per step: {mixes}")
    assert any(a != b for a, b in mixes), mixes

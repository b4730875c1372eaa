"""Upload under torchrun: ``torchrun --nproc_per_node 2`` (CPU, gloo) runs a real
``GRPOTrainer.train()`` with ``upload_run=`` on each rank (tests/upload_grpo_run.py), both
ranks against one echo ORS server and one stand-in of the platform API
(tests/platform_api.py). Each rank's process uploads its own rollouts, and flushes them when
it exits: every rollout each rank scored arrives exactly once, with its messages and reward,
marked with the rank that scored it. Wall times are printed (reported), not asserted; a hung
exit fails the test through the launch's deadline."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import ors_server
import upload_grpo_run
from conftest import ROOT
from platform_api import PlatformAPI
from test_e2e_grpo import ECHO_ENV, _warmed_model
from torchrun_launch import run_two_ranks

pytest.importorskip("trl")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]
KEY = "or-torchrun-upload-key-9f8e"
STEPS = 3


def test_each_torchrun_rank_uploads_its_own_rollouts_once_and_flushes_at_exit(
    ors_servers: ors_server.Servers, tmp_path: Path
) -> None:
    server = ors_servers.own(ECHO_ENV)
    _dataset, model = _warmed_model(server, tmp_path)
    api = PlatformAPI(tmp_path / "api")
    out = tmp_path / "train"
    script = ROOT / "tests" / "upload_grpo_run.py"
    env = api.child_env(KEY, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
    try:
        code, output = run_two_ranks(
            script,
            [server.url, str(model), str(out), str(STEPS), "--upload"],
            tmp_path / "torchrun.log",
            env=env,
            timeout=900,  # the deadline: a rank whose exit hangs fails the test
        )
        ended = time.time()
        assert code == 0, output[-6000:]
    finally:
        api.stop()
        server.stop()

    reports = {}
    for rank in (0, 1):
        path = out / f"report-rank-{rank}.json"
        assert path.exists(), f"rank {rank} wrote no report:\n{output[-6000:]}"
        reports[rank] = json.loads(path.read_text())
    assert reports[0]["pid"] != reports[1]["pid"]  # two processes

    uploaded = [r for r in api.rollouts().values() if r["messages"]]
    assert len({r["eventId"] for r in uploaded}) == len(uploaded)
    for rank, report in reports.items():
        assert report["error"] is None and report["world_size"] == 2
        assert len(report["scored"]) == STEPS * 2 and report["dropped"] == 0
        mine = [r for r in uploaded if r["metadata"].get("rank") == rank]
        assert all(r["metadata"]["world_size"] == 2 for r in mine)
        got = []
        for r in mine:
            (update,) = r["updates"]
            assert r["runName"] == "grpo-upload" and r["split"] == "train"
            assert r["run_info"]["rl_algorithm"] == "grpo"
            assert r["messages"][0]["type"] == "user_message"
            last = r["messages"][-1]
            assert last["isFinished"] is True
            info = update["rollout_info"]
            got.append((info["task_index"], last.get("reward"), info["current_step"]))
        want = sorted((s["task"], s["reward"], s["step"]) for s in report["scored"])
        assert sorted(got) == want, rank  # each of this rank's rollouts, once, by this rank
    assert len(uploaded) == sum(len(r["scored"]) for r in reports.values())  # no stray one

    requests = api.requests()
    bodies = "\n".join(q["body"] for q in requests)
    assert upload_grpo_run.SECRET not in bodies and KEY not in bodies
    assert upload_grpo_run.SECRET not in json.dumps([q["headers"] for q in requests])
    assert "uploading rollouts to the runs UI failed" not in output
    print(
        "\ntorchrun, 2 ranks x "
        + ", ".join(
            f"rank {k}: {len(r['scored'])} rollouts, train() {r['seconds']:.1f} s, "
            f"{ended - r['returned_at']:.1f} s from main()'s return to torchrun's end"
            for k, r in reports.items()
        )
    )

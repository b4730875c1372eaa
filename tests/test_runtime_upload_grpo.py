"""A real ``GRPOTrainer.train()`` with ``upload_run=`` against a stand-in of the platform
API (tests/platform_api.py): every rollout the trainer scored arrives once with its
messages and reward and the trainer's RunInfo; an API stopped mid-run costs no rollout and
no exception. Wall times are printed (reported), not asserted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import ors_server
import upload_grpo_run
from conftest import ROOT
from platform_api import PlatformAPI, dropped_at_exit
from test_e2e_grpo import ECHO_ENV, _warmed_model

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]
KEY = "or-grpo-upload-key-1a2b"
STEPS = 6


def _train(
    server: str, model: Path, out: Path, api: PlatformAPI, *extra: str
) -> tuple[dict[str, Any], str, float]:
    script = str(ROOT / "tests" / "upload_grpo_run.py")
    argv = [script, server, str(model), str(out), str(STEPS), *extra]
    report, proc, wall = api.run_child(
        argv, KEY, timeout=900, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"
    )
    return report, proc.stderr, wall


def test_grpo_rollouts_reach_the_runs_ui_once_and_a_stopped_api_costs_nothing(
    ors_servers: ors_server.Servers, tmp_path: Path
) -> None:
    server = ors_servers.own(ECHO_ENV)
    _dataset, model = _warmed_model(server, tmp_path)
    api = PlatformAPI(tmp_path / "api")
    try:
        base, _, base_wall = _train(server.url, model, tmp_path / "base", api)
        assert api.requests() == []  # no upload asked for, none made
        up, said, up_wall = _train(server.url, model, tmp_path / "up", api, "--upload")
    finally:
        api.stop()
    assert base["error"] is None and up["error"] is None
    scored = up["scored"]
    assert len(scored) == STEPS * 2 and up["dropped"] == 0
    uploaded = list(api.rollouts().values())
    assert len(uploaded) == len(scored)  # each rollout once
    assert len({r["eventId"] for r in uploaded}) == len(uploaded)
    got, want = [], sorted((s["task"], s["reward"], s["step"]) for s in scored)
    for r in uploaded:
        (update,) = r["updates"]
        info = r["run_info"]
        assert r["runName"] == "grpo-upload" and r["split"] == "train"
        assert info["model_name"] == str(model) and info["training_stage"] == "rl"
        assert info["rl_algorithm"] == "grpo" and info["framework"] == "trl"
        assert info["framework_version"] == "1.16.0" and info["batch_size"] == 2
        assert isinstance(info["lr"], float) and info["initial_step"] == 0
        kinds = [m["type"] for m in r["messages"]]
        assert kinds[0] == "user_message" and "assistant_message" in kinds or "tool_call" in kinds
        last = r["messages"][-1]
        got.append(
            (
                update["rollout_info"]["task_index"],
                last.get("reward"),
                update["rollout_info"]["current_step"],
            )
        )
    assert sorted(got) == want
    bodies = "\n".join(q["body"] for q in api.requests())
    assert upload_grpo_run.SECRET not in bodies and KEY not in bodies
    print(
        f"\nGRPOTrainer.train(), {STEPS} steps, {len(scored)} rollouts: {up['seconds']:.1f} s with "
        f"upload vs {base['seconds']:.1f} s without ({up['seconds'] / base['seconds'] - 1:+.1%}); "
        f"process {up_wall:.1f} s vs {base_wall:.1f} s"
    )

    stopped = PlatformAPI(tmp_path / "stopped")
    try:
        cut, said, cut_wall = _train(
            server.url,
            model,
            tmp_path / "cut",
            stopped,
            "--upload",
            "--kill-pid",
            str(stopped.proc.pid),
            "--kill-at-step",
            "2",
        )
    finally:
        stopped.stop()
    assert cut["error"] is None and len(cut["scored"]) == STEPS * 2  # no rollout lost
    assert said.count("uploading rollouts to the runs UI failed") == 1
    arrived = len(stopped.rollouts())
    # Dropped: counted in the trainer's ors/upload_dropped, or, for rollouts the uploader
    # still held when train() ended (a start under way, or waiting behind the probe), by the
    # exit's line; every rollout arrived or was dropped.
    dropped = cut["dropped"] + dropped_at_exit(said)
    assert 0 < arrived < len(cut["scored"]) and dropped >= 1
    assert arrived + dropped >= len(cut["scored"])
    print(
        f"API stopped after step 2: {arrived} arrived, {cut['dropped']:.0f} dropped (logged), "
        f"{dropped_at_exit(said)} at exit; "
        f"train() {cut['seconds']:.1f} s vs {base['seconds']:.1f} s without upload "
        f"({cut['seconds'] / base['seconds'] - 1:+.1%}); process {cut_wall:.1f} s"
    )

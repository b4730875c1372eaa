"""Opt-in trajectory records (``trajectories=``): one JSON line per rollout with the task,
each call, the outcome and why it is unscored; never a secret or an env override."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import ors_server
import pytest
from conftest import failed
from envs.trust_support import TRUST_ENV, TrustAdapter

from orsgen.runtime.rewards import outcome_reward
from orsgen.runtime.trajectories import writer as trajectories

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("fresh_runtime")]

SECRET = "sk-trust-0123456789abcdef"
OVERRIDE = "override-value-fedcba9876"


@pytest.fixture(scope="module")
def server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(TRUST_ENV)


def test_one_line_per_rollout_without_secrets(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "runs" / "trust.jsonl"
    make = lambda: TrustAdapter(  # noqa: E731
        base_url=server.url,
        prefetch=False,
        secrets={"api_token": SECRET},
        env_overrides={"BACKEND_TOKEN": OVERRIDE},
        trajectories=path,
        unfinished_reward=-1.0,
    )
    right, crash, silent = make(), make(), make()
    try:
        right.reset(task_index=0)
        right.hint()
        right.echo(text="apple")
        crash.reset(task_index=1)
        failed(crash.echo, text="banana")
        silent.reset(task_index=2)
        assert outcome_reward([right, crash, silent]) == [1.0, None, -1.0]
        silent.reset(task_index=3)  # a rollout is written once: scoring wrote it already
        outcome_reward([silent])
    finally:
        for env in (right, crash, silent):
            env.close()
        trajectories.writers().close()
    text = path.read_text()
    assert SECRET not in text and OVERRIDE not in text and "BACKEND_TOKEN" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert [(r["task_index"], r["outcome"], r["reward"]) for r in lines] == [
        (0, "scored", 1.0),
        (1, "failed", None),
        (2, "unfinished", -1.0),
        (3, "unfinished", -1.0),
    ]
    first = lines[0]
    assert [c["tool"] for c in first["calls"]] == ["hint", "echo"]
    assert first["calls"][1] == {
        "tool": "echo",
        "arguments": {"text": "apple"},
        "output": "echo: apple",
        "output_sha256": hashlib.sha256(b"echo: apple").hexdigest(),
        "truncated": False,
        "images": [],
        "reward": 1.0,
        "finished": True,
        "error": None,
        "seconds": first["calls"][1]["seconds"],
        "sent": True,
    }
    assert first["why_unscored"] is None and first["finished"] is True
    assert first["reset_s"] > 0 and first["env"] == "TrustAdapter" and first["split"] == "train"
    assert (
        lines[1]["why_unscored"] == "tool_raised" and lines[1]["calls"][0]["error"] == "tool_raised"
    )
    assert "grader crashed" in lines[1]["calls"][0]["output"]
    assert lines[2]["why_unscored"] == "no tool call" and lines[2]["calls"] == []


def test_one_file_per_process(tmp_path: Path) -> None:
    base = tmp_path / "x.jsonl"
    assert trajectories.process_path(base, 0, 1, forked=False) == base
    assert trajectories.process_path(base, 1, 2, forked=False) == tmp_path / "x.rank1.jsonl"
    forked = trajectories.process_path(base, 0, 1, forked=True)
    assert forked.name.startswith("x.pid") and forked.suffix == ".jsonl"

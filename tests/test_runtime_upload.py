"""Rollouts in OpenReward's runs UI (``upload_run=``), against a stand-in of the platform
API on loopback (tests/platform_api.py) and the echo ORS server. Each run is a child
process (tests/upload_child.py) that exits, so its exit flush is the real one.

Timing is reported (printed), not asserted, except one generous bound on exit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ors_server
import upload_child
from conftest import ROOT
from platform_api import PlatformAPI, dropped_at_exit

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
KEY = "or-upload-test-key-77aa"
WARNING = "uploading rollouts to the runs UI failed"


def _child(server: str, api: PlatformAPI, n: int, *extra: str) -> tuple[dict[str, Any], str, float]:
    argv = [str(ROOT / "tests" / "upload_child.py"), server, str(n), *extra]
    report, proc, wall = api.run_child(argv, KEY, timeout=240)
    return report, proc.stderr + proc.stdout, wall


def _bodies(api: PlatformAPI) -> str:
    return "\n".join(r["body"] for r in api.requests())


def test_every_rollout_arrives_once_with_its_messages_and_reward(
    echo_server: ors_server.RunningServer, tmp_path: Path
) -> None:
    api = PlatformAPI(tmp_path)
    try:
        out, said, _ = _child(echo_server.url, api, 8, "--upload")
    finally:
        api.stop()
    assert out["errors"] == [] and out["rewards"] == [1.0] * 8 and out["dropped"] == 0
    starts = [e for e in api.events() if e.get("eventType") == "rollout"]
    assert len(starts) == 8 and len({e["eventId"] for e in starts}) == 8  # each once
    rollouts = sorted(api.rollouts().values(), key=lambda r: r["timestamp"])
    for number, r in enumerate(rollouts):
        task = number % 4
        assert (r["runName"], r["environment"], r["split"]) == ("upload-test", "echoenv", "train")
        assert r["run_info"]["model_name"] == "tiny-model" and r["run_info"]["framework"] == "trl"
        assert r["metadata"]["verdict"] == "scored"
        kinds = [m["type"] for m in r["messages"]]
        # Both tool calls of the one assistant message arrive (the SDK's own
        # log_openai_completions would keep only the first event of it).
        assert kinds == [
            "user_message",
            "assistant_message",
            "tool_call",
            "tool_call",
            "tool_result",
            "tool_result",
            "assistant_message",
        ]
        assert [m["index"] for m in r["messages"]] == list(range(7))
        assert upload_child.WORDS[task] in r["messages"][0]["content"]
        calls = [json.loads(m["content"]) for m in r["messages"] if m["type"] == "tool_call"]
        assert calls == [{"text": "wrong"}, {"text": upload_child.WORDS[task]}]
        last = r["messages"][-1]
        assert last["reward"] == 1.0 and last["isFinished"] is True
        assert all("reward" not in m for m in r["messages"][:-1])
        (update,) = r["updates"]
        assert update["rollout_info"]["task_index"] == task
    bodies = _bodies(api)
    assert upload_child.SECRET not in bodies and KEY not in bodies
    assert upload_child.SECRET not in json.dumps([r["headers"] for r in api.requests()])
    assert {
        r["headers"].get("x-api-key") for r in api.requests() if r["path"] == "/v1/rollouts"
    } == {KEY}
    assert WARNING not in said


def test_a_stopped_api_costs_no_rollout_and_no_exception(
    echo_server: ors_server.RunningServer, tmp_path: Path
) -> None:
    n = 16
    api = PlatformAPI(tmp_path)
    try:
        base, _, base_wall = _child(echo_server.url, api, n)  # the same run, no upload
        assert api.requests() == []
        out, said, wall = _child(
            echo_server.url, api, n, "--upload", "--kill-pid", str(api.proc.pid), "--kill-at", "6"
        )
    finally:
        api.stop()
    assert out["errors"] == [] and out["rewards"] == [1.0] * n
    assert said.count(WARNING) == 1  # once per outage, not once per rollout
    arrived = len(api.rollouts())
    # Dropped: counted in the run's ors/upload_dropped, or by the exit's line for the
    # rollouts the uploader still held (a start under way, or waiting behind the probe,
    # when the run ended). Every rollout arrived or was dropped.
    dropped = out["dropped"] + dropped_at_exit(said)
    assert dropped >= 1 and arrived + dropped >= n
    print(
        f"\nAPI stopped at rollout 6 of {n}: {arrived} arrived, {dropped:.0f} dropped; "
        f"rollouts {sum(out['seconds']):.3f} s with upload vs {sum(base['seconds']):.3f} s "
        f"without; process {wall:.1f} s vs {base_wall:.1f} s"
    )


@pytest.mark.parametrize("status", [429, 503])
def test_a_refusing_api_drops_and_says_so_once(
    echo_server: ors_server.RunningServer, tmp_path: Path, status: int
) -> None:
    api = PlatformAPI(tmp_path)
    api.refuse(status)
    try:
        out, said, wall = _child(echo_server.url, api, 6, "--upload")
    finally:
        api.stop()
    assert out["errors"] == [] and out["rewards"] == [1.0] * 6
    # Every rollout dropped and counted: in the run's ors/upload_dropped, or, when the
    # uploader had not got to it before the run ended, by the exit's line.
    assert out["dropped"] + dropped_at_exit(said) == 6 and said.count("at exit") <= 1
    assert said.count(WARNING) <= 1  # once per outage (none if the exit ran out first)
    if status == 429:  # refused at once, so known down before the exit's 5 s run out
        assert said.count(WARNING) == 1
    assert wall < 90  # the exit flush is bounded (EXIT_BUDGET), whatever the SDK retries
    print(
        f"\nAPI answering {status}: {out['dropped']:.0f} dropped, process {wall:.1f} s, "
        f"rollouts {sum(out['seconds']):.3f} s"
    )

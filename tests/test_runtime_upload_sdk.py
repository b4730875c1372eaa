"""What the uploader sends (orsgen/runtime/upload/uploader.py): the requests of the SDK's
own upload client, ``RolloutAPI.create()`` and ``Rollout.log``, against the stand-in of the
platform API (tests/platform_api.py), which takes only what that client sends. And the
stand-in itself: the SDK's client gets everything through, a post it would never make is
turned down."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from orsgen.runtime.upload import uploader as uploader_module
from orsgen.runtime.upload.record import Record, UploadRun
from orsgen.runtime.upload.uploader import Uploader
from platform_api import PlatformAPI

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
KEY = "or-sdk-upload-test-key-81f0"


def _record(api: PlatformAPI, number: int, environment: str = "acme/echo") -> Record:
    return Record(
        run=UploadRun("sdk-test", model_name="tiny-model", run_info={"lr": 0.5}),
        environment=environment,
        split="train",
        task_index=number,
        task_spec={"index": number, "note": None},
        messages=[
            {"role": "user", "content": f"task {number}"},
            {
                "role": "assistant",
                "content": "calling",
                "tool_calls": [
                    {"id": f"c{number}", "function": {"name": "echo", "arguments": '{"t": 1}'}},
                    {"id": f"d{number}", "function": {"name": "echo", "arguments": '{"t": 2}'}},
                ],
            },
            {"role": "tool", "tool_call_id": f"c{number}", "content": "ü ok"},
            {"role": "assistant", "content": f"answer {number}"},
        ],
        reward=1.0,
        finished=True,
        metadata={"verdict": "scored", "reason": None, "source": "orsgen"},
        step=3,
        duration_ms=5,
        api_key=KEY,
        api_url=api.url,
    )


@pytest.fixture()
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PlatformAPI:
    monkeypatch.setenv("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
    server = PlatformAPI(tmp_path / "api")
    yield server  # type: ignore[misc]
    server.stop()


def test_each_start_is_posted_alone_and_answered_before_its_messages(api: PlatformAPI) -> None:
    up = Uploader()
    up.warm()
    for number in range(6):
        up.submit(_record(api, number))
    assert up.flush(60)
    assert up.uploaded == 6 and up.dropped_total == 0 and up.queued() == 0
    posts = [r for r in api.requests() if r["method"] == "POST"]
    assert {(r["path"], r["headers"]["x-api-key"]) for r in posts} == {("/v1/rollouts", KEY)}
    # The SDK posts each start alone (the uploader used to post up to 128 in one request,
    # which the platform was never shown to take), and waits for its answer before any of
    # the rollout's events is handed to its batches.
    started: dict[str, float] = {}
    for r in posts:
        found = json.loads(r["body"])["events"]
        if any(e["eventType"] == "rollout" for e in found):
            assert len(found) == 1
            started[found[0]["eventId"]] = r["t"]
    assert len(started) == 6
    for r in posts:
        for e in json.loads(r["body"])["events"]:
            if e["eventType"] != "rollout":
                assert started[e.get("rolloutEventId") or e["eventId"]] < r["t"]
    for r in api.rollouts().values():
        assert r["environment_id"] == "env-acme-echo" and r["run_info"]["lr"] == 0.5
        kinds = [m["type"] for m in r["messages"]]
        # every tool call of a message (the SDK's log_openai_completions keeps the first)
        assert kinds == ["user_message", "assistant_message", "tool_call", "tool_call",
                         "tool_result", "assistant_message"]  # fmt: skip
        assert [m["index"] for m in r["messages"]] == list(range(6))
        last = r["messages"][-1]
        assert last["reward"] == 1.0 and last["isFinished"] is True
        assert last["metadata"] == {"verdict": "scored", "source": "orsgen"}  # None dropped
        (update,) = r["updates"]
        assert update["rollout_info"]["current_step"] == 3
    assert KEY not in "\n".join(r["body"] for r in api.requests())


def test_a_full_queue_drops_counts_and_says_so_once(
    api: PlatformAPI, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(uploader_module, "QUEUE_SIZE", 2)
    api.hang()  # the first start never comes back; the others wait for it
    up = Uploader()
    up.warm()
    n = uploader_module.THREADS + 12
    with caplog.at_level(logging.WARNING, logger="orsgen.runtime"):
        for number in range(n):
            up.submit(_record(api, number, environment="echoenv"))  # never waits
        # At most THREADS rollouts in the threads' hands and 2 queued: the rest dropped.
        assert up.dropped_total >= n - uploader_module.THREADS - 2
        assert up.drain_metric() == {"ors/upload_dropped": float(up.dropped_total)}
        assert up.flush(30)
    assert up.dropped_total == n and up.uploaded == 0 and up.queued() == 0
    said = [r.getMessage() for r in caplog.records]
    assert sum("uploading rollouts to the runs UI failed" in line for line in said) == 1
    # One start at most: the probe (on a loaded machine the SDK may not have sent it yet
    # when the flush gives it up and closes the client).
    assert len([r for r in api.requests() if r["path"] == "/v1/rollouts"]) <= 1


def _post(api: PlatformAPI, events: list[dict[str, object]]) -> int:
    body = json.dumps({"events": events}).encode()
    headers = {"x-api-key": KEY, "Content-Type": "application/json"}
    request = urllib.request.Request(api.url + "/v1/rollouts", data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_standin_takes_what_the_sdk_sends_and_nothing_else(api: PlatformAPI) -> None:
    import openreward

    client = openreward.OpenReward(api_key=KEY)
    client.config.send_loop_config.base_url = api.url
    rollouts = client.rollout
    for number in range(3):
        rollout = rollouts.create(run_name="sdk", environment="acme/echo", split="train")
        rollout.log(openreward.UserMessage(content=f"task {number}"))
        rollout.log(openreward.AssistantMessage(content="answer"), reward=1.0, is_finished=True)
        assert rollout.logged_messages == 2  # the start went through
    rollouts.close()
    arrived = api.rollouts()
    assert len(arrived) == 3 and all(len(r["messages"]) == 2 for r in arrived.values())
    start = {"eventType": "rollout", "eventId": "a", "runName": "sdk"}
    assert _post(api, [start, {**start, "eventId": "b"}]) == 422  # two starts in one post
    assert _post(api, [start, {"eventType": "message", "rolloutEventId": "a"}]) == 422
    assert _post(api, [start]) == 200

"""What an outage of the platform API costs the uploader (orsgen/runtime/upload/uploader.py),
counted in requests against the stand-in API (tests/platform_api.py), not in seconds: one
rollout's start at a time while the API is not known to answer (the SDK's ``create()``,
tried 1 + its ``max_retries`` times on a 5xx); once it has failed, a probe is one start, and
a flush with the API known to be down drops what is queued without a request. An API that
accepts connections and never answers costs one start (taken as an outage after
START_TIMEOUT), not the exit's time.

An uploader of the test's own, in this process, with the SDK's real upload client."""

from __future__ import annotations

import json
from pathlib import Path

import openreward
import pytest

from orsgen.runtime.upload import uploader as uploader_module
from orsgen.runtime.upload.record import Record, UploadRun
from orsgen.runtime.upload.uploader import Uploader
from platform_api import PlatformAPI

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
KEY = "or-outage-test-key-3c4d"
TRIES_ON_5XX = 1 + openreward.OpenReward(api_key=KEY).config.send_loop_config.max_retries


def _record(api: PlatformAPI, number: int) -> Record:
    return Record(
        run=UploadRun("outage-test", model_name="tiny-model"),
        environment="echoenv",
        split="train",
        task_index=number,
        task_spec={"index": number},
        messages=[
            {"role": "user", "content": f"task {number}"},
            {"role": "assistant", "content": f"answer {number}"},
        ],
        reward=1.0,
        finished=True,
        metadata={"verdict": "scored"},
        step=None,
        duration_ms=5,
        api_key=KEY,
        api_url=api.url,
    )


def _starts(api: PlatformAPI) -> list[str]:
    """The rollout of each request that posted a start (each try of it counts)."""
    return [
        e["eventId"]
        for r in api.requests()
        if r["path"] == "/v1/rollouts"
        for e in json.loads(r["body"])["events"]
        if e.get("eventType") == "rollout"
    ]


def _settled(up: Uploader) -> None:
    up._queue.join()  # pyright: ignore[reportPrivateUsage] - the test waits for the thread


@pytest.fixture()
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PlatformAPI:
    monkeypatch.setenv("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
    server = PlatformAPI(tmp_path)
    yield server  # type: ignore[misc]
    server.stop()


def test_a_probe_of_a_down_api_is_one_request_and_recovery_is_noticed(
    api: PlatformAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(uploader_module, "RETRY_FIRST", 0.0)  # probe at the next rollout
    up = Uploader()
    up.warm()
    api.refuse(503)
    up.submit(_record(api, 0))  # not known to answer yet: a start and its retries
    _settled(up)
    assert up.down and up.dropped_total == 1 and len(_starts(api)) == TRIES_ON_5XX
    up.submit(_record(api, 1))  # known down: a probe, one start
    _settled(up)
    assert up.down and up.dropped_total == 2 and len(set(_starts(api))) == 2
    api.refuse(None)
    up.submit(_record(api, 2))  # the probe goes through: the outage is over
    _settled(up)
    assert not up.down
    up.submit(_record(api, 3))
    assert up.flush(60)
    assert not up.down and up.uploaded == 2 and up.dropped_total == 2
    # (the stand-in records each refused start too: a rollout arrived when its messages did)
    arrived = [r for r in api.rollouts().values() if r["messages"]]
    assert sorted(r["task_spec"]["index"] for r in arrived) == [2, 3]
    for r in arrived:
        assert r["messages"][-1]["reward"] == 1.0 and r["messages"][-1]["isFinished"] is True


def test_a_flush_with_the_api_known_down_drops_the_queue_without_a_request(
    api: PlatformAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(uploader_module, "RETRY_FIRST", 0.0)  # no pause left to drop in
    up = Uploader()
    up.warm()
    api.refuse(503)
    # The first start goes through the SDK's retries (7.5 s) while the others wait behind
    # it; the flush begins meanwhile, so when the first fails (or has taken START_TIMEOUT)
    # the API is known down and the others are dropped without a request.
    for number in range(9):
        up.submit(_record(api, number))
    assert up.flush(60)
    assert up.down and up.dropped_total == 9 and up.uploaded == 0 and up.queued() == 0
    assert len(set(_starts(api))) == 1 and len(_starts(api)) <= TRIES_ON_5XX
    assert not any(r["messages"] for r in api.rollouts().values())
    bodies = "\n".join(r["body"] for r in api.requests())
    assert KEY not in bodies


def test_an_api_that_never_answers_costs_one_start_and_the_flush_ends(
    api: PlatformAPI,
) -> None:
    up = Uploader()
    up.warm()
    api.hang()  # records each request, answers none
    for number in range(5):
        up.submit(_record(api, number))
    # After START_TIMEOUT the first start is taken as an outage: the API is known down,
    # the start is counted as dropped (its thread still waits for the SDK) and the rest
    # are dropped without a request.
    assert up.flush(30)
    assert up.down and up.dropped_total == 5 and up.uploaded == 0 and up.queued() == 0
    # (at most: on a loaded machine the SDK may not have sent it yet when it is given up)
    assert len(_starts(api)) <= 1 and len(api.requests()) == len(_starts(api))

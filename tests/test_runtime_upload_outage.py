"""What an outage of the platform API costs the uploader (orsgen/runtime/upload/uploader.py),
counted in requests against the stand-in API (tests/platform_api.py), not in seconds: a
start is tried 1 + START_RETRIES times on a 5xx (not the SDK's five: a try and four retries,
7.5 s); once it has failed, a probe is one request, and a flush with the API known to be
down drops what is queued without a request. An API that accepts connections and never
answers costs one start (given up after START_TIMEOUT), not the exit's time.

An uploader of the test's own, in this process, with the SDK's real upload client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orsgen.runtime.upload import uploader as uploader_module
from orsgen.runtime.upload.record import Record, UploadRun
from orsgen.runtime.upload.uploader import Uploader
from platform_api import PlatformAPI

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
KEY = "or-outage-test-key-3c4d"
TRIES_ON_5XX = 1 + uploader_module.START_RETRIES  # 3 (0.5 + 1 s)


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


def _starts(api: PlatformAPI) -> int:
    """Requests that posted a rollout's start event (each try of it counts)."""
    return sum(
        1
        for r in api.requests()
        if r["path"] == "/v1/rollouts"
        and any(e.get("eventType") == "rollout" for e in json.loads(r["body"])["events"])
    )


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
    up.submit(_record(api, 0))  # healthy so far: a start and its retries
    _settled(up)
    assert up.down and up.dropped_total == 1 and _starts(api) == TRIES_ON_5XX
    up.submit(_record(api, 1))  # known down: a probe, one request
    _settled(up)
    assert up.down and up.dropped_total == 2 and _starts(api) == TRIES_ON_5XX + 1
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
    # The first start goes through its retries (1.5 s) while the others wait behind it; the
    # flush begins meanwhile, so when the first fails the API is known down and the others
    # are dropped without a request. (Before: each of them probed with the SDK's retries,
    # 8 x 7.5 s.)
    for number in range(9):
        up.submit(_record(api, number))
    assert up.flush(60)
    assert up.down and up.dropped_total == 9 and up.uploaded == 0 and up.queued() == 0
    assert _starts(api) == TRIES_ON_5XX
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
    # The first start is given up after START_TIMEOUT: the API is known down and the rest
    # are dropped without a request. (Before: the SDK's start waited with no timeout of its
    # own, so the flush ran out of its time with every rollout still queued.)
    assert up.flush(30)
    assert up.down and up.dropped_total == 5 and up.uploaded == 0 and up.queued() == 0
    assert _starts(api) == 1
    assert len(api.requests()) == 1

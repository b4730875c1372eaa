"""What the uploader sends (orsgen/runtime/upload/wire.py): the SDK's own requests,
over one kept-alive connection, with one environment lookup per catalog environment.
Against the stand-in platform API (tests/platform_api.py); the SDK's own upload client
(``RolloutAPI.create()`` and ``Rollout.log``) against a second one, for the same bodies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orsgen.runtime.transport import sdk
from orsgen.runtime.upload.record import Record, UploadRun
from orsgen.runtime.upload.uploader import Uploader
from platform_api import PlatformAPI

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
KEY = "or-wire-test-key-81f0"
# Values that change from one send to the next (ids and clocks), left out of comparisons.
VARYING = {"eventId", "rolloutEventId", "timestamp"}


def _record(api: PlatformAPI, number: int, environment: str = "acme/echo") -> Record:
    return Record(
        run=UploadRun("wire-test", model_name="tiny-model", run_info={"lr": 0.5}),
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
                    {"id": f"c{number}", "function": {"name": "echo", "arguments": '{"t": 1}'}}
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
    server = PlatformAPI(tmp_path / "ours")
    yield server  # type: ignore[misc]
    server.stop()


def _upload(api: PlatformAPI, records: list[Record]) -> Uploader:
    up = Uploader()
    up.warm()
    for record in records:
        up.submit(record)
    assert up.flush(60)
    assert up.uploaded == len(records) and up.dropped_total == 0
    return up


def test_one_connection_one_lookup_and_the_starts_before_their_messages(api: PlatformAPI) -> None:
    _upload(api, [_record(api, n) for n in range(6)])
    requests = api.requests()
    # The SDK's create() looks the environment up before every start, and opens a new
    # connection for that and for the start: 6 lookups, 12 connections or more.
    lookups = [r for r in requests if r["method"] == "GET"]
    assert [r["path"] for r in lookups] == ["/v1/environments/acme/echo"]
    assert len({r["peer"] for r in requests}) == 1  # one kept-alive connection
    # Headers as the SDK's: its User-Agent everywhere, the key on the posts only.
    assert {r["headers"]["user-agent"] for r in requests} == {sdk.upload_user_agent()}
    assert "x-api-key" not in lookups[0]["headers"]
    posts = [r for r in requests if r["method"] == "POST"]
    assert {(r["path"], r["headers"]["x-api-key"]) for r in posts} == {("/v1/rollouts", KEY)}
    assert all(r["headers"]["content-type"] == "application/json" for r in posts)
    # Starts are posted on their own (those of rollouts that settle together in one
    # request), each acknowledged before any event of its rollout is sent.
    first_seen: dict[str, int] = {}
    for number, r in enumerate(posts):
        events = json.loads(r["body"])["events"]
        if events[0]["eventType"] == "rollout":
            assert {e["eventType"] for e in events} == {"rollout"}
            first_seen.update((e["eventId"], number) for e in events)
        else:
            for e in events:
                owner = e.get("rolloutEventId") or e["eventId"]
                assert first_seen[owner] < number
    # The starts of rollouts that settle together go in one request (START_SPACING apart).
    assert 1 <= len({n for n in first_seen.values()}) <= 2
    rollouts = api.rollouts()
    assert len(rollouts) == 6
    for r in rollouts.values():
        assert r["environment_id"] == "env-acme-echo"
        assert [m["index"] for m in r["messages"]] == [0, 1, 2, 3, 4]
        assert all(m["environment_id"] == "env-acme-echo" for m in r["messages"])
        assert len(r["updates"]) == 1


def test_an_api_that_takes_one_start_per_request_gets_them_one_by_one(api: PlatformAPI) -> None:
    api.one_start_per_request()
    _upload(api, [_record(api, n) for n in range(6)])  # every rollout uploaded, none dropped
    bodies = [
        json.loads(r["body"])["events"]
        for r in api.requests()
        if r["method"] == "POST" and '"eventType": "rollout"' in r["body"]
    ]
    turned_down = [b for b in bodies if len(b) > 1]
    assert len(turned_down) == 1  # once: the wire takes one at a time from then on
    accepted = [b[0] for b in bodies if len(b) == 1]
    assert sorted(e["task_spec"]["index"] for e in accepted) == list(range(6))
    arrived = {e["eventId"] for e in accepted}
    messages = [e for e in api.events() if e.get("eventType") == "message"]
    assert {e["rolloutEventId"] for e in messages} == arrived


def _without_varying(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_varying(v) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [_without_varying(v) for v in value]
    return value


def _sdk_upload(api: PlatformAPI, record: Record, up: Uploader) -> None:
    """The same rollout through the SDK's own upload client."""
    import openreward
    from openreward.models import RolloutInfo, RunInfo

    from orsgen.runtime.upload.record import events

    client = openreward.OpenReward(api_key=KEY)
    client.config.send_loop_config.base_url = api.url
    rollouts = client.rollout
    started = rollouts.create(
        run_name=record.run.run_name,
        environment=record.environment,
        split=record.split,
        metadata=dict(record.metadata),
        task_spec=dict(record.task_spec or {}),
        run_info=RunInfo(**_run_info_fields(up, record)),
    )
    base: Any = __import__("openreward.api.rollouts.serializers.base", fromlist=["x"])
    kinds = {
        "user_message": base.UserMessage,
        "assistant_message": base.AssistantMessage,
        "tool_call": base.ToolCall,
        "tool_result": base.ToolResult,
    }
    found = events(record.messages)
    for number, (kind, fields) in enumerate(found):
        last = number == len(found) - 1
        info = RolloutInfo(task_index=record.task_index, current_step=record.step,
                           duration_ms=record.duration_ms, harness="orsgen")  # fmt: skip
        started.log(
            kinds[kind](**fields),
            reward=record.reward if last else None,
            is_finished=record.finished if last else False,
            metadata=dict(record.metadata) if last else None,
            rollout_info=info if last else None,
        )
    rollouts.close()


def _run_info_fields(up: Uploader, record: Record) -> dict[str, Any]:
    info = up._run_info(record)  # pyright: ignore[reportPrivateUsage] - the same RunInfo
    return {k: getattr(info, k) for k in info.__dataclass_fields__}


def test_the_bodies_are_the_sdks_own(api: PlatformAPI, tmp_path: Path) -> None:
    record = _record(api, 1)
    up = _upload(api, [record])
    theirs = PlatformAPI(tmp_path / "sdk")
    try:
        _sdk_upload(theirs, record, up)
    finally:
        theirs.stop()
    for server in (api, theirs):
        assert len(server.rollouts()) == 1
    ours = [_without_varying(e) for e in api.events()]
    sdk_events = [_without_varying(e) for e in theirs.events()]
    # The SDK's batches may come in any order; the events of each kind are the same.
    key = lambda e: (e["eventType"], e.get("index", -1))  # noqa: E731
    assert sorted(ours, key=key) == sorted(sdk_events, key=key)
    assert [e["eventType"] for e in api.events()][0] == "rollout"
    start_bodies = [
        r["body"]
        for s in (api, theirs)
        for r in s.requests()
        if '"eventType": "rollout"' in r["body"]
    ]
    assert len(start_bodies) == 2  # one start each, with the same bytes but for ids and clocks
    ours_start, sdk_start = (json.loads(b) for b in start_bodies)
    assert _without_varying(ours_start) == _without_varying(sdk_start)
    assert list(ours_start["events"][0]) == list(sdk_start["events"][0])  # the key order too


def test_encode_event_is_the_sdks_encoding() -> None:
    from openreward.api.rollouts import background
    from openreward.models import LogMessageEvent, RolloutStartedEvent, RolloutUpdateEvent

    nested = {"a": None, "b": {"c": None, "d": [1, None, {"e": None}]}, "f": "ü"}
    found = [
        RolloutStartedEvent(eventId="r", timestamp=1, runName="n", metadata=nested, task_spec={}),
        RolloutUpdateEvent(eventId="r", timestamp=2, rollout_info={"task_index": 0, "x": None}),
        LogMessageEvent(
            eventId="m", timestamp=3, index=0, rolloutEventId="r", environment_id=None,
            type="tool_call", content="{}", contentReference=None, summary=None, name="echo",
            callId="c", reward=None, isFinished=False, metadata=nested,
        ),  # fmt: skip
    ]
    for event in found:
        encoded = sdk.encode_event(event)
        assert encoded == json.loads(
            background._encode_event(event)
        )  # pyright: ignore[reportPrivateUsage]
        assert json.dumps(encoded) == json.dumps(
            json.loads(background._encode_event(event))
        )  # pyright: ignore[reportPrivateUsage]

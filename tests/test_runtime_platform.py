"""``platform_difficulty``: the platform's per-task difficulty, read through the SDK from
a stand-in of the platform API on loopback (tests/platform_api.py), as a pass-rate prior.
Every way of getting no prior is one warning and an empty mapping, never an exception."""

from __future__ import annotations

import json
import urllib.parse
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from platform_api import PlatformAPI, difficulty_row as row
from orsgen.runtime.platform import PlatformPriorWarning, platform_difficulty

KEY = "or-test-key-5b1e"
ROWS = [
    row(0, 1.0, 1.0, 1.0, 8, split="train"),
    row(1, 0.25, 0.0, 1.0, 8, split="train"),
    row(2, 0.0, 0.0, 0.0, 8, split="train"),
    row(3, 0.5, 0.0, 1.0, 4, split="train", variant="a"),  # two variants of task 3,
    row(3, 1.0, 1.0, 1.0, 4, split="train", variant="b"),  # pooled by rollouts: 0.75
    row(4, 1.0, 1.0, 1.0, 2, split="train"),  # too few rollouts: unseen
    row(5, 0.9, 0.0, 1.0, 8, split="test"),  # another split
    row(6, 0.1, 0.0, 1.0, 8, split="train", model_name="other-model"),
]


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PlatformAPI]:
    server = PlatformAPI(tmp_path, ROWS)
    monkeypatch.setenv("OPENREWARD_API_URL", server.url)
    monkeypatch.setenv("OPENREWARD_API_KEY", KEY)
    monkeypatch.setenv("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
    try:
        yield server
    finally:
        server.stop()


def _ours(said: pytest.WarningsRecorder) -> list[warnings.WarningMessage]:
    return [w for w in said if issubclass(w.category, PlatformPriorWarning)]


def _quiet(**kw: object) -> dict[int, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", PlatformPriorWarning)  # a warning would fail the test
        return platform_difficulty("acme/adder", **kw)  # type: ignore[arg-type]


def test_binary_rewards_give_pass_rates_of_seen_tasks(api: PlatformAPI) -> None:
    prior = _quiet(split="train", model_name="tiny-model", training_stage="rl")
    assert prior == {0: 1.0, 1: 0.25, 2: 0.0, 3: 0.75}
    (asked,) = [r for r in api.requests() if r["path"].startswith("/v1/environments/acme/adder/")]
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(asked["path"]).query))
    assert query == {"split": "train", "model_name": "tiny-model", "training_stage": "rl"}
    assert asked["headers"]["x-api-key"] == KEY


def test_min_rollouts_is_the_users_to_lower(api: PlatformAPI) -> None:
    assert _quiet(split="train", min_rollouts=1)[4] == 1.0


def test_other_rewards_are_exact_where_they_can_be_and_say_what_stands_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [row(0, 0.3, 0.1, 0.6, 8), row(1, 0.95, 0.9, 1.0, 8), row(2, 0.7, 0.2, 1.0, 8)]
    server = PlatformAPI(tmp_path, rows)
    monkeypatch.setenv("OPENREWARD_API_URL", server.url)
    monkeypatch.setenv("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
    try:
        with pytest.warns(PlatformPriorWarning, match=r"not binary, so for 1 of 3 tasks") as said:
            prior = platform_difficulty("acme/graded", pass_threshold=0.9)
    finally:
        server.stop()
    assert prior == {0: 0.0, 1: 1.0, 2: 0.7}  # never, always, the mean standing in
    assert len(_ours(said)) == 1


@pytest.mark.parametrize(
    "name, match", [("adder", "needs a catalog name"), (None, "needs a catalog name")]
)
def test_no_catalog_name_is_one_warning_and_no_prior(name: str | None, match: str) -> None:
    with pytest.warns(PlatformPriorWarning, match=match) as said:
        assert platform_difficulty(name) == {}
    assert len(_ours(said)) == 1


def test_an_empty_answer_is_one_warning_and_no_prior(api: PlatformAPI) -> None:
    with pytest.warns(
        PlatformPriorWarning, match="has no task for split='nope', model_name='nobody'"
    ) as said:
        assert platform_difficulty("acme/adder", split="nope", model_name="nobody") == {}
    assert len(_ours(said)) == 1


@pytest.mark.parametrize("status", [429, 503, "stopped"])
def test_a_refusing_or_stopped_api_is_one_warning_and_no_prior(
    api: PlatformAPI, status: int | str
) -> None:
    if status == "stopped":
        api.stop()
    else:
        api.refuse(int(status))
    with pytest.warns(PlatformPriorWarning, match="no prior from") as said:
        assert platform_difficulty("acme/adder", timeout=20) == {}
    assert len(_ours(said)) == 1
    assert KEY not in str(_ours(said)[0].message)


def test_the_rows_the_stand_in_serves_are_the_sdks_shape(api: PlatformAPI) -> None:
    import openreward

    client = openreward.OpenReward()
    try:
        rows = client.environments.get("acme/adder").get_task_difficulty(split="test")
    finally:
        client.close()
    assert [(r.task_index, r.avg_reward, r.split) for r in rows] == [(5, 0.9, "test")]
    assert json.dumps(ROWS)  # the stand-in's rows are plain JSON


def test_a_platform_prior_reaches_the_curriculum(api: PlatformAPI) -> None:
    from orsgen.runtime.choosing.curriculum import PassRateCurriculum

    curriculum = PassRateCurriculum(prior=_quiet(split="train", min_rollouts=4))
    curriculum.start(range(8), 0, 4)
    pools = {t: curriculum.pool(t) for t in range(8)}
    assert pools == {
        0: "solved",
        1: "learning",
        2: "unsolved",
        3: "learning",
        4: "unseen",
        5: "unseen",
        6: "unseen",
        7: "unseen",  # too few rollouts, other split
    }


def test_no_prior_is_no_prior_for_the_curriculum() -> None:
    from orsgen.runtime.choosing.curriculum import PassRateCurriculum

    with pytest.warns(PlatformPriorWarning):
        curriculum = PassRateCurriculum(prior=platform_difficulty("local-only"))
    curriculum.start(range(4), 0, 2)
    assert curriculum.pools()["unseen"] == 4

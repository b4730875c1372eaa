"""The committed ``generated/rich`` package against a real server running its example:
renamed tools and parameters reach the server under their wire names, and nested
arguments are checked client-side."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import failed
from generated.rich import RichEnv
from wire_map import wire_params


@pytest.fixture
def env(rich_server: Any) -> Any:
    adapter = RichEnv(base_url=rich_server.url, prefetch=False)
    adapter.reset(task_index=0)
    yield adapter
    adapter.close()


def test_renamed_names_map_back_to_the_wire() -> None:
    assert RichEnv.WIRE_NAMES["import_"][0] == "import"
    # Only the names that differ are listed; the others go out as they are.
    assert RichEnv.WIRE_NAMES["open_doc"] == ("open-doc", {"page_size_2": "page-size"})
    assert wire_params(RichEnv, "open_doc") == {
        "id": "id",
        "page_size": "page_size",
        "page_size_2": "page-size",
    }
    assert RichEnv.TERMINAL_TOOL == ("submit", "answer")


def test_calls_reach_the_server_under_wire_names(env: Any) -> None:
    assert env.search(query="grpo", in_="title", max_results=3) == "0 results for 'grpo'"
    assert env.open_doc(id=4, page_size_2=10) == "document 4"
    assert env.import_(ids=[1, 2], filters={"year": {"low": 2020}}) == "saved 2"
    assert env.peek(part="end") == "2024"  # the task tool of task 0


def test_invalid_nested_arguments_fail_without_a_round_trip(env: Any, rich_server: Any) -> None:
    rich_server.reset_counts()
    failure = failed(env.search, query="x", filters={"year": {"low": "last year"}})
    text = str(failure)
    assert (
        text.startswith("tool 'search' rejected the call: invalid argument(s)") and "year" in text
    )
    assert failure.reason == "invalid_arguments" and not failure.environment_failed
    assert rich_server.requests().get("POST /richenv/call", 0) == 0
    assert env.search(query="x") == "0 results for 'x'"  # a valid call is one request
    assert rich_server.requests().get("POST /richenv/call", 0) == 1


def test_a_client_side_failure_is_recorded_under_the_wire_name_it_is_given(env: Any) -> None:
    # Generated methods pass their tool's wire name; the runtime takes it as given, with no
    # look at the caller's frame, so the name is the same from any call site.
    failure = failed(env._fail, "open-doc", "invalid argument(s) page_size: too big")
    assert failure.tool == "open-doc" and failure.reason == "invalid_arguments"
    assert str(failure).startswith("tool 'open-doc' rejected the call: invalid argument(s)")
    assert env.rewards[-1] is None and env.last_output == f"Error: {failure}"
    # Through a generated method: the wire name ("import"), not the Python one ("import_").
    assert failed(env.import_, ids=[1], filters={"tags": None}).tool == "import"


@pytest.mark.parametrize(
    "filters",
    [{"tags": None}, {"year": {"low": None}}, {"kind": "book", "tags": ["a", None]}],
    ids=["tags-null", "low-null", "tag-null"],
)
def test_null_where_the_schema_allows_none_fails_client_side(
    env: Any, rich_server: Any, filters: dict[str, Any]
) -> None:
    # tags and low are optional but never null on the server (low defaults to 0).
    rich_server.reset_counts()
    text = str(failed(env.import_, ids=[1], filters=filters))
    # The wire name ("import"), not the Python one, and the model's own mistake.
    assert text.startswith("tool 'import' rejected the call: ") and "filters" in text, text
    assert rich_server.requests().get("POST /richenv/call", 0) == 0


def test_null_where_the_schema_allows_it_is_sent(env: Any, rich_server: Any) -> None:
    rich_server.reset_counts()
    assert env.import_(ids=[1], filters={"kind": None, "year": {"high": None}}) == "saved 1"
    assert env.import_(ids=[1], filters={"year": None}) == "saved 1"
    assert rich_server.requests().get("POST /richenv/call", 0) == 2

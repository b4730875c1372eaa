"""``load_tasks`` (orsgen/runtime/dataset.py) against real ORS servers: the rows TRL's
bridge builds (``trl.experimental.openreward.OpenRewardSpec.train_dataset``), in the
fewest round trips the server allows, and clear errors. Expected values come from the
task list in tests/envs/rules_env.py, not from orsgen's output.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import ors_server
from conftest import RULES_ENV
from generated.echo import load_tasks
from orsgen.runtime.errors import TaskLoadError

_spec = importlib.util.spec_from_file_location("_rules_env_tasks", RULES_ENV)
assert _spec is not None and _spec.loader is not None
_rules = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_rules)
TARGETS, TASKS = _rules.TARGETS, _rules.TASKS

EMPTY_USER = [{"role": "user", "content": ""}]
pytestmark = [
    pytest.mark.timeout(120),
    # Asserted once, in test_rows_and_metadata_columns.
    pytest.mark.filterwarnings("ignore:task metadata 'answer':UserWarning"),
]


def test_rows_and_metadata_columns(rules_pkg, rules_server) -> None:
    rules_server.reset_counts()
    with pytest.warns(UserWarning, match="'answer'"):
        ds = rules_pkg.load_tasks(base_url=rules_server.url)
    assert ds.num_rows == len(TASKS)
    assert ds["task_index"] == list(range(len(TASKS)))
    assert ds["prompt"] == [EMPTY_USER] * len(TASKS)
    # Every task-spec key is a column, except the two that collide with reserved ones
    # (`split` is the split the rows came from).
    assert set(ds.column_names) == {"prompt", "task_index", "split", "target", "level", "answer"}
    # Mixed int/str values cannot share an Arrow type: each becomes its JSON text.
    assert ds["answer"] == [json.dumps(t["answer"]) for t in TASKS]
    assert ds["target"] == TARGETS
    assert ds["level"] == [t["level"] for t in TASKS]
    # The whole split in one round trip, not one request per task.
    calls = rules_server.requests()
    assert calls.get("POST /rulesenv/task_range", 0) + calls.get("POST /rulesenv/tasks", 0) == 1
    assert "POST /rulesenv/task" not in calls


def test_num_tasks_takes_the_first_tasks(rules_pkg, rules_server) -> None:
    rules_server.reset_counts()
    ds = rules_pkg.load_tasks(num_tasks=3, base_url=rules_server.url)
    assert ds["task_index"] == [0, 1, 2]
    assert ds["target"] == TARGETS[:3]
    assert rules_server.requests().get("POST /rulesenv/task", 0) == 0


def test_num_tasks_beyond_the_split_is_capped(rules_pkg, rules_server) -> None:
    ds = rules_pkg.load_tasks(num_tasks=100, base_url=rules_server.url)
    assert ds["task_index"] == list(range(len(TASKS)))


def test_indices_keep_their_order(rules_pkg, rules_server) -> None:
    ds = rules_pkg.load_tasks(indices=[4, 1, 5], base_url=rules_server.url)
    assert ds["task_index"] == [4, 1, 5]
    assert ds["target"] == [TARGETS[4], TARGETS[1], TARGETS[5]]
    assert ds["prompt"] == [EMPTY_USER] * 3


def test_other_split(rules_pkg, rules_server) -> None:
    ds = rules_pkg.load_tasks(split="test", base_url=rules_server.url)
    assert ds["task_index"] == [0, 1]
    assert ds["target"] == TARGETS[:2]


def test_num_tasks_and_indices_are_mutually_exclusive(rules_pkg, rules_server) -> None:
    rules_server.reset_counts()
    with pytest.raises(ValueError):
        rules_pkg.load_tasks(num_tasks=2, indices=[0, 1], base_url=rules_server.url)
    # Rejected before any request.
    assert rules_server.requests() == {}


def test_without_metadata(rules_pkg, rules_server) -> None:
    ds = rules_pkg.load_tasks(include_metadata=False, base_url=rules_server.url)
    assert ds.column_names == ["prompt", "task_index", "split"]


def test_reserved_columns_are_never_overwritten(rules_pkg, rules_server) -> None:
    """Task specs carry ``prompt`` and ``task_index`` keys; the dataset keeps its own."""
    assert all("prompt" in t and "task_index" in t for t in TASKS)  # the env really collides
    ds = rules_pkg.load_tasks(indices=[3, 0], base_url=rules_server.url)
    assert ds["prompt"] == [EMPTY_USER, EMPTY_USER]
    assert ds["task_index"] == [3, 0]
    assert not any("spec-prompt" in str(p) for p in ds["prompt"])


def test_a_dataset_row_resets_the_adapter(rules_pkg, rules_server) -> None:
    """TRL calls ``reset(**row)`` with every column; metadata columns must be accepted."""
    ds = rules_pkg.load_tasks(indices=[2], base_url=rules_server.url)
    env = rules_pkg.RulesEnv(base_url=rules_server.url)
    try:
        assert env.reset(**ds[0]) == f"Answer with the word {TARGETS[2]!r}."
    finally:
        env.close()


@pytest.mark.parametrize("indices, bad", [([8], 8), ([2, 9], 9), ([5, 6], 6)])
def test_an_index_past_the_split_names_itself(rules_pkg, rules_server, indices, bad) -> None:
    with pytest.raises(IndexError) as info:
        rules_pkg.load_tasks(indices=indices, base_url=rules_server.url)
    assert f"task index {bad} " in str(info.value)
    assert f"({len(TASKS)} tasks)" in str(info.value)


@pytest.mark.slow
@pytest.mark.parametrize(
    "dropped, expected_path",
    [
        (["/{env_name}/task_range"], "POST /rulesenv/tasks"),
        (["/{env_name}/task_range", "/{env_name}/tasks"], "POST /rulesenv/task"),
    ],
    ids=["no task_range", "index API only"],
)
def test_falls_back_when_the_server_lacks_an_endpoint(
    rules_pkg, ors_servers, dropped, expected_path
) -> None:
    server = ors_servers(RULES_ENV, drop_routes=dropped)
    server.reset_counts()
    ds = rules_pkg.load_tasks(base_url=server.url)
    assert ds["task_index"] == list(range(len(TASKS)))
    assert ds["target"] == TARGETS
    sub = rules_pkg.load_tasks(indices=[3, 1], base_url=server.url)
    assert sub["target"] == [TARGETS[3], TARGETS[1]]
    calls = server.requests()
    assert calls.get(expected_path, 0) >= 1, calls
    for path in dropped:
        assert calls.get("POST " + path.replace("{env_name}", "rulesenv"), 0) >= 1  # tried


def test_load_tasks_against_a_dead_server_raises() -> None:
    """Unlike a tool call, building the dataset happens before training: it may raise."""
    port = ors_server.free_port()
    with pytest.raises(Exception, match=str(port)):
        load_tasks(base_url=f"http://127.0.0.1:{port}")


def test_without_datasets_installed_the_error_says_what_to_install(
    echo_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "datasets", None)  # what `import datasets` sees without it
    with pytest.raises(ImportError, match=r"pip install datasets") as raised:
        load_tasks(base_url=echo_server.url)
    assert raised.value.name == "datasets"


def test_an_unknown_split_names_the_splits_the_server_has(rules_pkg, rules_server) -> None:
    """The server's own answer is a bare "Invalid split" (HTTP 400)."""
    stored = json.loads((Path(rules_pkg.__file__).parent / "snapshot.json").read_text())
    splits = sorted(s["name"] for s in stored["environment"]["splits"])
    with pytest.raises(TaskLoadError) as caught:
        rules_pkg.load_tasks(split="nope", base_url=rules_server.url)
    message = str(caught.value)
    assert message.startswith("split 'nope' does not exist on ")
    assert f"its splits: {', '.join(splits)};" in message

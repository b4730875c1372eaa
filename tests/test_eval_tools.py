"""``summary.json["tools"]`` (orsgen/runtime/records/tools.py): per-tool calls, failures by the
environment and by the model apart, mean and p90 seconds.

End to end: ``orsgen eval`` on tests/envs/flaky_env.py, whose ``lookup`` fails on the server
on every third call it receives and writes each call to a ledger, driven by the scripted
stand-in (tests/openai_standin.py) calling ``note``, a tool that does not exist, then
``lookup``. The figures are compared with what the server saw. Then the aggregation alone,
on calls written by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import openai_standin
import ors_server
from conftest import ENVS, generate_and_import
from conftest import eval_args as _args
from conftest import results_rows as _rows
from conftest import run_eval

from orsgen.eval.report import tool_table
from orsgen.runtime.records.tools import UNKNOWN, ToolTally, tool_calls
from orsgen.runtime.errors import ToolEnvironmentError, ToolInputError
from orsgen.runtime.records.episode import Episode

FLAKY_ENV = ENVS / "flaky_env.py"
TASKS, SAMPLES = 3, 4  # flaky_env's "test" split, and samples of each


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_eval_counts_exactly_the_failures_the_server_saw(
    ors_servers: ors_server.Servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv("FLAKY_LEDGER", str(ledger))  # read by the server process it starts
    server = ors_servers.own(FLAKY_ENV)
    monkeypatch.delenv("FLAKY_LEDGER")
    package = Path(generate_and_import(FLAKY_ENV, tmp_path / "flaky_eval").__file__).parent
    model = openai_standin.start(tmp_path, tools="note,nosuch,lookup", argument="text")
    out = tmp_path / "run"
    args = _args(package, server, model) + ["--split", "test", "-n", str(SAMPLES)]
    try:
        code, _out, err = run_eval(args + ["--concurrency", "3", "--out", str(out)])
        assert code == 0, err
        again, _out, err = run_eval(args + ["--concurrency", "3", "--out", str(out), "--resume"])
        assert again == 0, err
    finally:
        model.stop()
        server.stop()

    seen = [json.loads(line) for line in ledger.read_text().splitlines()]
    rollouts = TASKS * SAMPLES
    assert len(seen) == rollouts  # one lookup a rollout, the last call the server gets
    failed = sum(1 for call in seen if call["failed"])
    assert 0 < failed < len(seen)
    tools = json.loads((out / "summary.json").read_text())["tools"]  # as the resumed run read it
    assert set(tools) == {"lookup", "note", UNKNOWN}
    assert tools["lookup"]["calls"] == len(seen)
    assert tools["lookup"]["environment_failed"] == failed == tools["lookup"]["failed"]
    assert tools["lookup"]["model_failed"] == 0
    assert tools[UNKNOWN] == {**tools[UNKNOWN], "calls": rollouts, "model_failed": rollouts}
    assert tools[UNKNOWN]["environment_failed"] == 0
    assert tools["note"]["calls"] == rollouts and tools["note"]["failed"] == 0
    for figures in tools.values():
        assert 0 <= figures["mean_s"] and 0 <= figures["p90_s"]
    # Each row lists its own calls: the adapter's in order, then the one it never saw.
    for row in _rows(out):
        names = [call[0] for call in row["tool_calls"]]
        assert names == ["note", "lookup", UNKNOWN], row["tool_calls"]
    report = (out / "report.md").read_text()
    assert "## Per tool" in report
    assert f"| lookup | {len(seen)} | {failed} | {failed} | 0 |" in report


def test_a_tally_counts_each_tool_and_who_failed() -> None:
    tally = ToolTally()
    tally.add([["a", None, 0.5], ["a", "environment", 1.5], ["b", "model", 0.0]])
    tally.add(None)  # a row from before tool_calls: nothing
    tally.add([["a", None, float(s)] for s in range(1, 9)])
    a, b = tally.figures()["a"], tally.figures()["b"]
    assert (a["calls"], a["failed"], a["environment_failed"], a["model_failed"]) == (10, 1, 1, 0)
    assert a["mean_s"] == pytest.approx((0.5 + 1.5 + sum(range(1, 9))) / 10)
    # Nearest rank: the 9th smallest of 10 (0.5, 1, 1.5, 2, ..., 8).
    assert a["p90_s"] == 7.0
    assert b == {
        "calls": 1,
        "failed": 1,
        "environment_failed": 0,
        "model_failed": 1,
        "off_recording": 0,
        "mean_s": 0.0,
        "p90_s": 0.0,
    }
    assert list(tally.figures()) == ["a", "b"]


def test_one_call_is_its_own_p90() -> None:
    tally = ToolTally()
    tally.add([["a", None, 0.25]])
    assert tally.figures()["a"]["p90_s"] == 0.25


def test_recorded_calls_keep_who_failed_and_the_models_name() -> None:
    class Adapter:
        WIRE_NAMES: Any = {"look_up": ("look-up", {}), "submit": ("submit", {})}

    episode = Episode()
    episode.called("look-up", {}, "ok", None, False, 0.1)
    failure = ToolEnvironmentError("look-up", "tool_raised", "boom")
    episode.called("look-up", {}, str(failure), None, False, 0.2, failure)
    failure = ToolInputError("submit", "invalid_arguments", "bad")
    episode.called("submit", {}, str(failure), None, False, 0.0, failure)
    episode.called("grade", {}, "graded", 1.0, True, 0.3)  # the hidden terminal tool
    assert tool_calls(Adapter, episode.calls) == [
        ["look_up", None, 0.1],
        ["look_up", "environment", 0.2],
        ["submit", "model", 0.0],
        ["grade", None, 0.3],
    ]


def test_the_report_has_a_row_per_tool() -> None:
    tally = ToolTally()
    tally.add([["lookup", "environment", 0.002], ["lookup", None, 0.004], ["nosuch", "model", 0]])
    lines = tool_table({"tools": tally.figures()})
    assert lines[1] == "## Per tool"
    assert "| lookup | 2 | 1 | 1 | 0 | 0.003 | 0.004 |" in lines
    assert "| nosuch | 1 | 1 | 0 | 1 | 0 | 0 |" in lines
    assert tool_table({"tools": {}}) == []

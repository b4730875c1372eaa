"""What each rollout cost and why it ended (issue 40 items 1-4, 6): a row's ``usage``,
``stop``, ``invalid_tool_calls`` and ``cost``, summary.json's ``usage``, ``stop`` and
``cost``, report.md, ``--max-rollout-tokens`` and ``evaluate()``'s typed fields.

``orsgen eval`` runs against the real echo server (examples/echo_env.py) and the scripted
stand-in (tests/openai_standin.py ``--script``), told per task what to answer at each turn.
Every expectation is computed here from that script and the stand-in's stated usage (10
prompt tokens per message it is sent, 5 + turn completion tokens), never from orsgen's
output."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import openai_standin
import ors_server
from conftest import ROOT, eval_args, results_rows, run_eval

from orsgen.eval import EvalConfig, evaluate
from orsgen.eval.command import load_adapter

ECHO = ROOT / "generated" / "echo"
PRICE = (2.0, 10.0)  # per million prompt and completion tokens
CALLS = {"right", "wrong", "nonjson", "misfit", "mistyped", "unknown"}  # a step that calls
INVALID = {"nonjson", "misfit", "mistyped", "unknown"}
ENDS = {"right": "finished", "plain": "no_tool_call", "cut": "length"}

pytestmark = pytest.mark.timeout(600)


def expected(
    steps: Sequence[str], usage: bool, max_turns: int, limit: int | None = None
) -> dict[str, Any]:
    """The row of a rollout the stand-in answers by ``steps``, by the issue's rules: turn t's
    request holds 1 + 2t messages (each earlier turn one call and its result)."""
    prompt = completion = invalid = turns = 0
    stop = "max_turns"
    for turn in range(max_turns):
        step = steps[min(turn, len(steps) - 1)]
        if step == "fail":
            stop = "error"
            break
        turns += 1
        prompt += 10 * (1 + 2 * turn)
        completion += 5 + turn
        invalid += step in INVALID
        if step in ENDS:
            stop = ENDS[step]
            break
        if limit is not None and usage and prompt + completion > limit:
            stop = "token_limit"
            break
    tokens: dict[str, int | None] = {"prompt_tokens": prompt, "completion_tokens": completion}
    if not usage:
        tokens = {"prompt_tokens": None, "completion_tokens": None}
    cost = (prompt * PRICE[0] + completion * PRICE[1]) / 1e6 if usage else None
    return {
        "usage": tokens,
        "stop": stop,
        "invalid_tool_calls": invalid,
        "cost": cost,
        "turns": turns,
    }


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[Any]:
    started: list[openai_standin.Standin] = []

    def make(script: Mapping[str, list[str]], no_usage: str = "") -> openai_standin.Standin:
        server = openai_standin.start(
            tmp_path, tool="echo", argument="text", script=json.dumps(script), no_usage=no_usage
        )
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


def _args(server: ors_server.RunningServer, model: Any, *more: str) -> list[str]:
    return [*eval_args(ECHO, server, model), *more]


# echo's test split: fig, grape, lemon, mango (task 0..3).
TEST_SCRIPT = {
    "fig": ["wrong", "right"],  # finished on turn 2
    "grape": ["wrong"],  # loops until --max-turns, and reports no usage
    "lemon": ["nonjson", "unknown", "plain"],  # answers without a tool call
    "mango": ["misfit", "mistyped", "cut"],  # its last answer cut
}
TEST_WORDS = ["fig", "grape", "lemon", "mango"]


@pytest.mark.slow
def test_each_row_says_what_it_cost_and_why_it_ended(
    echo_server: ors_server.RunningServer, scripted: Any, tmp_path: Path
) -> None:
    model = scripted(TEST_SCRIPT, no_usage="grape")
    out, n, turns = tmp_path / "run", 2, 3
    args = ["--split", "test", "-n", str(n), "--max-turns", str(turns), "--price", "2,10"]
    code, _, err = run_eval(_args(echo_server, model, *args, "--out", str(out)))
    assert code == 0, err

    rows = results_rows(out)
    assert len(rows) == len(TEST_WORDS) * n
    wanted = {w: expected(TEST_SCRIPT[w], w != "grape", turns) for w in TEST_WORDS}
    for row in rows:
        want = wanted[TEST_WORDS[row["task_index"]]]
        got = {k: row[k] for k in want}
        assert got == {**want, "cost": got["cost"]}, row["task_index"]
        if want["cost"] is None:
            assert got["cost"] is None
        else:
            assert got["cost"] == pytest.approx(want["cost"], rel=1e-12)
    # An unscored row's reason still says what ended it.
    by_task = {row["task_index"]: row for row in rows}
    assert by_task[3]["verdict"] == "unfinished" and "finish_reason length" in by_task[3]["reason"]
    assert by_task[0]["verdict"] == "scored" and by_task[0]["reward"] == 1.0

    summary = json.loads((out / "summary.json").read_text())
    known = [w for w in TEST_WORDS if wanted[w]["usage"]["prompt_tokens"] is not None]
    prompt = n * sum(wanted[w]["usage"]["prompt_tokens"] for w in known)
    completion = n * sum(wanted[w]["usage"]["completion_tokens"] for w in known)
    assert summary["usage"] == {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "rollouts_without_usage": n,
        "prompt_tokens_per_rollout": prompt / (n * len(known)),
        "completion_tokens_per_rollout": completion / (n * len(known)),
    }
    stops = Counter(wanted[w]["stop"] for w in TEST_WORDS for _ in range(n))
    assert summary["stop"] == dict(stops)
    assert set(summary["stop"]) == {"finished", "max_turns", "no_tool_call", "length"}
    cost = n * math.fsum(wanted[w]["cost"] for w in known)
    assert summary["cost"] == pytest.approx(cost, rel=1e-12)
    grape = summary["per_task"][1]["usage"]
    assert grape["rollouts_without_usage"] == n and grape["prompt_tokens_per_rollout"] is None
    fig = summary["per_task"][0]["usage"]
    assert fig["prompt_tokens_per_rollout"] == wanted["fig"]["usage"]["prompt_tokens"]
    assert json.loads((out / "run.json").read_text())["price"] == list(PRICE)

    report = (out / "report.md").read_text()
    for stop, count in stops.items():
        assert f"`{stop}` {count}" in report
    assert f"{prompt} prompt, {completion} completion" in report
    assert f"{n} rollouts without usage" in report and f"cost: {cost:.4f}" in report
    assert "| prompt tokens / rollout | completion tokens / rollout |" in report
    fig_tokens = wanted["fig"]["usage"]
    assert (
        f"| {fig_tokens['prompt_tokens']:.1f} | {fig_tokens['completion_tokens']:.1f} |" in report
    )

    # A resume with another price is another run: refused, naming it.
    code, _, err = run_eval(
        _args(echo_server, model, *args[:-1], "3,15", "--out", str(out), "--resume")
    )
    assert code == 2 and "--price was [2.0, 10.0] and is now" in err, err


# echo's train split: apple, banana, cherry, damson.
TRAIN_SCRIPT = {
    "apple": ["mistyped"],  # passes the token limit, unscored
    "banana": ["wrong", "fail"],  # the endpoint fails its second request
    "cherry": ["right"],
    "damson": ["wrong"],  # no usage: the limit cannot see its tokens, --max-turns ends it
}
TRAIN_WORDS = ["apple", "banana", "cherry", "damson"]


@pytest.mark.slow
def test_max_rollout_tokens_ends_a_rollout_with_token_limit(
    echo_server: ors_server.RunningServer, scripted: Any, tmp_path: Path
) -> None:
    model = scripted(TRAIN_SCRIPT, no_usage="damson")
    out, limit, turns = tmp_path / "run", 100, 5
    args = ["--split", "train", "--max-turns", str(turns), "--max-rollout-tokens", str(limit)]
    code, _, err = run_eval(_args(echo_server, model, *args, "--out", str(out)))
    assert code == 0, err
    wanted = [expected(TRAIN_SCRIPT[w], w != "damson", turns, limit) for w in TRAIN_WORDS]
    assert [w["stop"] for w in wanted] == ["token_limit", "error", "finished", "max_turns"]
    assert wanted[0]["turns"] == 3 and wanted[0]["invalid_tool_calls"] == 3
    rows = sorted(results_rows(out), key=lambda r: r["task_index"])
    for row, want in zip(rows, wanted, strict=True):
        assert {k: row[k] for k in want} == {**want, "cost": None}, row["task_index"]
    apple = rows[0]["usage"]
    assert apple["prompt_tokens"] + apple["completion_tokens"] > limit  # passed after a turn
    assert "token limit (100) passed" in rows[0]["reason"]
    assert rows[1]["verdict"] == "failed" and "HTTP 400" in rows[1]["reason"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cost"] is None and summary["max_rollout_tokens"] == limit
    report = (out / "report.md").read_text()
    assert "`token_limit` 1" in report and "`error` 1" in report and "cost:" not in report


@pytest.mark.slow
def test_evaluate_gives_them_as_typed_fields(
    echo_server: ors_server.RunningServer, scripted: Any
) -> None:
    model = scripted(TRAIN_SCRIPT, no_usage="damson")
    config = EvalConfig(
        model=model.model,
        endpoint=model.endpoint,
        split="train",
        max_turns=4,
        max_rollout_tokens=100,
        price=PRICE,
    )
    klass = load_adapter(str(ECHO), None)
    result = evaluate(klass, config, adapter={"base_url": echo_server.url}, progress=False)
    wanted = [expected(TRAIN_SCRIPT[w], w != "damson", 4, 100) for w in TRAIN_WORDS]
    records = sorted(result.records, key=lambda r: r.task_index)
    for record, want in zip(records, wanted, strict=True):
        assert record.stop == want["stop"] and record.usage == want["usage"]
        assert record.invalid_tool_calls == want["invalid_tool_calls"]
        assert record.prompt_tokens == want["usage"]["prompt_tokens"]
        assert record["cost"] == (want["cost"] and pytest.approx(want["cost"]))
    known = [w for w in wanted if w["cost"] is not None]
    assert result.usage.prompt_tokens == sum(w["usage"]["prompt_tokens"] for w in known)
    assert result.usage.rollouts_without_usage == 1
    assert result.stop == dict(Counter(w["stop"] for w in wanted))
    assert result.cost == pytest.approx(math.fsum(w["cost"] for w in known))


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--price", "3"], "--price: takes IN,OUT"),
        (["--price", "3,-1"], "--price: must be at least 0"),
        (["--max-rollout-tokens", "0"], "--max-rollout-tokens: must be at least 1"),
    ],
)
def test_a_bad_price_or_token_limit_is_one_line(
    option: list[str], said: str, tmp_path: Path
) -> None:
    args = [str(ECHO), "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", *option]
    code, _, err = run_eval(args)
    assert code == 2 and said in err and "Traceback" not in err, err

"""The run log (issue 47): ``open_run`` reads every kind of run main wrote before it existed
(tests/fixtures/runs_v0: an evaluation, two shards and their merge, a replay, a training
trajectory file) as typed rollouts equal to the rows on disk; one error type for an
unreadable run (exit 2 at the CLI); ``orsgen export`` to Inspect's log and to Parquet; and a
user's script reading ``open_run`` passes ``mypy --strict``."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, CliRun, eval_args

from orsgen import RunError, open_run

RUNS = ROOT / "tests" / "fixtures" / "runs_v0"
# fixture -> (kind, rollouts, split)
KINDS = {
    "eval": ("eval", 6, "test"),
    "shard-0": ("eval", 6, "test"),
    "merged": ("merged", 12, "test"),
    "replay": ("replay", 6, "test"),
    "train.jsonl": ("trajectory", 3, "train"),
}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("name", sorted(KINDS))
def test_open_run_reads_each_fixture_run_as_its_rows(name: str) -> None:
    run = open_run(RUNS / name)
    kind, count, split = KINDS[name]
    rows = list(run.rows())
    assert (run.spec.kind, len(rows), run.spec.split) == (kind, count, split)
    raw = _lines(RUNS / name if kind == "trajectory" else RUNS / name / "results.jsonl")
    for rollout, row in zip(rows, raw, strict=True):
        assert rollout.task_index == row["task_index"] and rollout.reward == row["reward"]
        assert rollout.split == row["split"]
        assert [c.tool for c in rollout.env_calls] == [
            c["tool"] for c in row.get("env_calls", row.get("calls", []))
        ]
        if kind == "trajectory":
            assert (rollout.sample, rollout.step, rollout.verdict) == (None, None, row["outcome"])
            assert rollout.reason == row["why_unscored"] and rollout.messages == []
        else:
            assert (rollout.sample, rollout.verdict) == (row["sample"], row["verdict"])
            assert rollout.messages == row["messages"] and rollout.summary()["stop"] == row.get(
                "stop"
            )
            assert not rollout.truncated
    if kind == "trajectory":
        assert run.summary is None and run.package is None
    else:
        config = json.loads((RUNS / name / "run.json").read_text())
        assert run.spec.raw == config and run.package == Path(config["package"])
        assert run.summary == json.loads((RUNS / name / "summary.json").read_text())
    if kind in ("eval", "merged"):
        usage = [r.usage for r in rows]
        assert usage == [type(u)(**row["usage"], recorded=True) for u, row in zip(usage, raw)]
    if kind == "merged":
        assert run.spec.merged == 2 and {r.verdict for r in rows} == {"scored"}
        assert {r.reward for r in rows} == {0.0, 1.0}  # some pass, some fail


def test_an_unreadable_run_is_one_error_naming_file_and_line(
    tmp_path: Path, orsgen_cli: Callable[[list[str]], CliRun]
) -> None:
    run = tmp_path / "run"
    shutil.copytree(RUNS / "eval", run)
    results = run / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join([lines[0], "\n", '{"task_index": "x", "sample": 9}\n']))
    with pytest.raises(RunError, match=rf"{results}: line 3 has \"x\" as its task_index"):
        list(open_run(run).rows())
    results.write_text('{"task_index": 0, "sample": 0, "verdict": "won"}\n')
    with pytest.raises(RunError, match=rf"{results}: line 1: verdict 'won' is not one of"):
        list(open_run(run).rows())
    results.write_text(lines[0] + "not json\n")
    with pytest.raises(RunError, match=r"line 2 is not a JSON object"):
        list(open_run(run).rows())
    with pytest.raises(RunError, match="does not exist"):
        open_run(tmp_path / "none")
    done = orsgen_cli(["export", str(run), "--format", "parquet", "-o", str(tmp_path / "x.pq")])
    assert done.code == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("orsgen export: error:") and "line 2" in done.stderr


@pytest.mark.parametrize("name", ["merged", "train.jsonl"])
def test_export_parquet_is_one_row_per_rollout_pandas_and_datasets_read(
    name: str, tmp_path: Path, orsgen_cli: Callable[[list[str]], CliRun]
) -> None:
    import datasets
    import pandas

    out = tmp_path / "run.parquet"
    done = orsgen_cli(["export", str(RUNS / name), "--format", "parquet", "-o", str(out)])
    assert done.code == 0, done.stderr
    rows = list(open_run(RUNS / name).rows())
    frame = pandas.read_parquet(out)
    assert len(frame) == len(rows)
    assert [None if math.isnan(x) else x for x in frame["reward"]] == [r.reward for r in rows]
    table = datasets.Dataset.from_parquet(str(out), cache_dir=str(tmp_path / "cache"))
    assert table.num_rows == len(rows)
    assert [len(c) for c in table["env_calls"]] == [len(r.env_calls) for r in rows]
    assert [len(m) for m in table["messages"]] == [len(r.messages) for r in rows]


@pytest.mark.parametrize("name", ["merged", "replay", "train.jsonl"])
def test_export_inspect_reads_back_with_the_runs_scores_and_tokens(
    name: str, tmp_path: Path, orsgen_cli: Callable[[list[str]], CliRun]
) -> None:
    import inspect_ai.log as log_mod  # in orsgen[dev]: never skipped

    out = tmp_path / "run.eval"
    done = orsgen_cli(["export", str(RUNS / name), "--format", "inspect", "-o", str(out)])
    assert done.code == 0, done.stderr
    rows = list(open_run(RUNS / name).rows())
    log = log_mod.read_eval_log(str(out))
    assert log.samples is not None and len(log.samples) == len(rows)
    in_order = sorted(log.samples, key=lambda s: int(s.metadata["row"]))
    for sample, rollout in zip(in_order, rows, strict=True):
        value = sample.scores["reward"].value
        assert (None if math.isnan(value) else value) == rollout.reward
        assert sample.metadata["verdict"] == rollout.verdict
        tokens = sum(u.total_tokens for u in sample.model_usage.values())
        assert tokens == (rollout.usage.total_tokens or 0)
        assert len(sample.messages) == len(rollout.messages)
    total = sum(u.total_tokens for u in log.stats.model_usage.values())
    assert total == sum(r.usage.total_tokens or 0 for r in rows)


USER_SCRIPT = """\
from orsgen import open_run

run = open_run("tests/fixtures/runs_v0/eval")
split: str = run.spec.split
n: int | None = run.spec.n
for row in run.rows():
    task: int = row.task_index
    sample: int | None = row.sample
    reward: float | None = row.reward
    verdict: str = row.verdict
    stop: str | None = row.stop
    tokens: int | None = row.usage.prompt_tokens
    tools: list[str] = [c.tool for c in row.env_calls]
    slim = row.summary()
"""


@pytest.mark.slow  # mypy over orsgen
def test_a_users_script_reading_open_run_passes_mypy_strict(tmp_path: Path) -> None:
    script = tmp_path / "user.py"
    script.write_text(USER_SCRIPT)
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent"]
        + ["--cache-dir", str(tmp_path / "cache"), str(script)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _records(run: Path) -> list[tuple[Any, ...]]:
    return [(r["task_index"], r["sample"], r["verdict"], r["reward"]) for r in _lines(run)]


def _view(tmp_path: Path, cli: Callable[[list[str]], CliRun]) -> None:
    for name in ("eval", "merged", "replay", "train.jsonl"):
        page = tmp_path / f"{name}.html"
        assert cli(["view", str(RUNS / name), "-o", str(page)]).code == 0
        data = page.read_text().split('type="application/json">')[1].split("</script>")[0]
        records = json.loads(data)["records"]
        got = [(r["task"], r["verdict"], r["reward"], r["stop"]) for r in records]
        path = RUNS / name if name.endswith(".jsonl") else RUNS / name / "results.jsonl"
        raw = _lines(path)
        assert got == [
            (r["task_index"], r.get("verdict", r.get("outcome")), r["reward"], r.get("stop"))
            for r in raw
        ]


# Each command on the v0 runs, with what main at 5e6461c said of them (the pages were
# byte-identical to main's, and the datasets' data files too).
COMMANDS: dict[str, Callable[[Path, Callable[[list[str]], CliRun]], None]] = {
    "view": _view,
    "sft": lambda tmp, cli: _says(
        cli(["sft", *_at("eval", "merged"), "--allow-split", "test", "-o", str(tmp / "d")]),
        "wrote 4 rows (4 tasks) from 2 run(s)",
    ),
    "pairs": lambda tmp, cli: _says(
        cli(["pairs", *_at("merged"), "--allow-split", "test", "-o", str(tmp / "d")]),
        "wrote 2 pairs (2 tasks) from 1 run(s)",
        "2 duplicates",
    ),
    "compare": lambda tmp, cli: _says(
        cli(["eval", "--compare", *_at("eval", "merged")]), "pass@1 B-A: +0.000", "no_tool_call 3"
    ),
}


def _at(*names: str) -> list[str]:
    return [str(RUNS / name) for name in names]


def _says(done: CliRun, *lines: str) -> None:
    assert done.code == 0, done.stderr
    assert all(line in done.stdout for line in lines), done.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_reads_the_v0_runs_as_main_did(
    command: str, tmp_path: Path, orsgen_cli: Callable[[list[str]], CliRun]
) -> None:
    COMMANDS[command](tmp_path, orsgen_cli)


@pytest.fixture
def quoting(tmp_path: Path) -> Iterator[Any]:
    """The scripted stand-in the v0 runs were written with (tests/fixtures/make_runs_v0.py)."""
    import openai_standin

    server = openai_standin.start(tmp_path, tool="echo", argument="text", quote=3)
    try:
        yield server
    finally:
        server.stop()


def test_eval_resume_finishes_a_v0_run_and_keeps_its_rows(
    echo_server: Any, quoting: Any, tmp_path: Path, orsgen_cli: Callable[[list[str]], CliRun]
) -> None:
    """``orsgen eval --resume`` of copies of the v0 runs, with the options that wrote them: an
    evaluation cut to its first 4 rows runs only the 2 rollouts left, keeps the 4 rows byte
    for byte and ends with the rows and figures main wrote; the complete merged run says so
    and leaves its rows as they are."""
    args = eval_args(ROOT / "generated" / "echo", echo_server, quoting)
    args += ["--split", "test", "-n", "3", "--seed", "11", "--resume", "--out"]
    cut, merged = tmp_path / "eval", tmp_path / "merged"
    shutil.copytree(RUNS / "eval", cut)
    shutil.copytree(RUNS / "merged", merged)
    kept = (cut / "results.jsonl").read_bytes().splitlines(keepends=True)[:4]
    (cut / "results.jsonl").write_bytes(b"".join(kept))
    (cut / "summary.json").unlink()
    done = orsgen_cli(["eval", *args, str(cut), "--indices", "0,1"])
    assert done.code == 0 and "2 of 6 rollouts left" in done.stderr, done.stderr
    assert (cut / "results.jsonl").read_bytes().startswith(b"".join(kept))
    assert _records(cut / "results.jsonl") == _records(RUNS / "eval" / "results.jsonl")
    figures = ("rollouts", "mean_reward", "pass_at_k", "verdicts")
    after, before = (json.loads((run / "summary.json").read_text()) for run in (cut, RUNS / "eval"))
    assert {k: after.get(k) for k in figures} == {k: before.get(k) for k in figures}
    rows = (merged / "results.jsonl").read_bytes()
    done = orsgen_cli(["eval", *args, str(merged)])
    assert done.code == 0, done.stderr
    assert f"the run in {merged} is complete (12 rollouts): nothing to run" in done.stderr
    assert (merged / "results.jsonl").read_bytes() == rows


def test_a_training_trajectory_file_or_directory_is_a_curriculum_prior(tmp_path: Path) -> None:
    """Through open_run: each task's scored rollouts passed by their line's threshold (task 2's
    one rollout is unfinished: not covered); a directory's files add up; its split is checked
    against another run's (a trajectory records no environment name or tool hash)."""
    from orsgen.runtime.choosing.curriculum import PassRateCurriculum

    for name in ("a.jsonl", "b.jsonl"):
        shutil.copy(RUNS / "train.jsonl", tmp_path / name)
    for prior in (RUNS / "train.jsonl", tmp_path):
        made = PassRateCurriculum(prior=prior).prior
        assert made is not None and made.rates == {0: 1.0, 1: 0.0}
    with pytest.raises(RunError, match=r"differ in split \('test' and 'train'\)"):
        PassRateCurriculum(prior=[RUNS / "train.jsonl", RUNS / "eval"])


@pytest.mark.parametrize("command", ["sft", "pairs"])
def test_sft_and_pairs_refuse_a_training_trajectory_in_one_line(
    command: str, tmp_path: Path, orsgen_cli: Callable[[list[str]], CliRun]
) -> None:
    done = orsgen_cli([command, str(RUNS / "train.jsonl"), "-o", str(tmp_path / "out")])
    assert done.code == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "training trajectory" in done.stderr and "no model text" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_cut_text_is_flagged_beside_its_mark_and_old_rows_read_the_same() -> None:
    """eval writes ``truncated`` beside the mark; a row from before the flag (the mark only)
    reads as cut, and the flag, where there is one, is what readers go by."""
    from orsgen.data.trainset import left_out
    from orsgen.eval.conversation import MAX_TOOL_OUTPUT, stored
    from orsgen.runlog.record import message_truncated

    long = stored({"role": "tool", "content": "x" * (MAX_TOOL_OUTPUT + 1), "name": "echo"})
    assert long["truncated"] is True and long["content"].endswith("(1 more characters)")
    assert "truncated" not in stored({"role": "tool", "content": "short", "name": "echo"})
    old = {k: v for k, v in long.items() if k != "truncated"}
    assert message_truncated(old) and left_out([old]) == "cut"
    said = {**old, "truncated": False}  # a text that only looks like the mark
    assert not message_truncated(said) and left_out([said]) is None

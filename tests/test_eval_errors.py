"""``orsgen eval``'s error paths and its files, as a user meets them: a real ORS server
(tests/envs/chance_env.py, tests/envs/judge_env.py, bench/lottery_env.py) and a real HTTP
endpoint, the scripted OpenAI-compatible stand-in (tests/openai_standin.py), which answers
at once, or with the HTTP error a test asks for. Nothing is mocked."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import openai_standin
import ors_server
from conftest import ENVS, ROOT
from conftest import eval_args as _args
from conftest import results_rows as _rows
from conftest import run_eval as _run

JUDGE_ENV = ENVS / "judge_env.py"
LOTTERY_ENV = ROOT / "bench" / "lottery_env.py"
CHANCE_TEST_TASKS = 4  # tests/envs/chance_env.py's "test" split

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[Callable[..., openai_standin.Standin]]:
    started: list[openai_standin.Standin] = []

    def make(**options: Any) -> openai_standin.Standin:
        server = openai_standin.start(tmp_path, **options)
        started.append(server)
        return server

    try:
        yield make
    finally:
        for server in started:
            server.stop()


def run_eval(args: list[str]) -> subprocess.CompletedProcess[str]:
    code, out, err = _run(args)
    return subprocess.CompletedProcess(args, code, out, err)


def _one_error_line(run: subprocess.CompletedProcess[str]) -> str:
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("orsgen eval: error: "), run.stderr
    return lines[0]


def test_an_unknown_split_names_the_option(chance_dir, chance_server, standin, tmp_path) -> None:
    run = run_eval(_args(chance_dir, chance_server, standin()) + ["--split", "nosuch"])
    assert run.returncode == 2, run.stderr
    line = _one_error_line(run)
    assert "'nosuch' does not exist" in line and "--split" in line and "split=" not in line
    assert "does not answer" not in line  # the package's snapshot says so, before any network


def test_resume_where_there_is_no_run_starts_it(
    chance_dir, chance_server, standin, tmp_path
) -> None:
    """A requeued job runs the same command: --resume on a directory with no run starts it."""
    out = tmp_path / "empty"
    out.mkdir()
    args = _args(chance_dir, chance_server, standin()) + ["--split", "test"]
    run = run_eval(args + ["--out", str(out), "--resume"])
    assert run.returncode == 0, run.stderr
    rows = _rows(out)
    assert rows and len({(r["task_index"], r["sample"]) for r in rows}) == len(rows)


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_is_one_line_naming_the_key_option(
    status, chance_dir, chance_server, standin, tmp_path
) -> None:
    model = standin(models_status=status, models_message="Invalid API key", chat_status=status)
    out = tmp_path / "run"
    run = run_eval(_args(chance_dir, chance_server, model) + ["--split", "test", "--out", str(out)])
    assert run.returncode == 2, run.stderr
    line = _one_error_line(run)
    assert f"HTTP {status}" in line and "Invalid API key" in line
    assert "--endpoint-api-key" in line and "OPENAI_API_KEY" in line
    assert not (out / "results.jsonl").exists()  # no rollout ran


def test_the_endpoints_own_error_is_kept_and_no_retry_is_claimed(
    chance_dir, chance_server, standin, tmp_path
) -> None:
    said = "Server is pinned to /models/tiny; it does not serve 'standin'"
    model = standin(chat_status=400, chat_message=said)
    out = tmp_path / "run"
    run = run_eval(_args(chance_dir, chance_server, model) + ["--split", "test", "--out", str(out)])
    assert run.returncode == 0, run.stderr
    rows = _rows(out)
    assert len(rows) == CHANCE_TEST_TASKS
    for row in rows:
        assert row["verdict"] == "failed"
        assert row["reason"] == f"HTTP 400 from {model.endpoint} (BadRequestError): {said}"
        assert "retr" not in row["reason"]


def test_the_end_is_one_summary_line_and_says_where_results_went(
    chance_dir, chance_server, standin, tmp_path
) -> None:
    out = tmp_path / "run"
    args = _args(chance_dir, chance_server, standin())
    run = run_eval(args + ["--split", "test", "-n", "11", "--concurrency", "4", "--out", str(out)])
    assert run.returncode == 0, run.stderr
    (printed,) = run.stdout.splitlines()  # one readable line
    assert printed.startswith("44 rollouts on split 'test' in "), printed
    assert ", pass@1 " in printed and ", pass@11 " in printed and "{" not in printed
    assert any(line.startswith(f"results in {out}") for line in run.stderr.splitlines())
    run = run_eval(args + ["--split", "test", "--num-tasks", "1"])  # no --out
    assert run.returncode == 0, run.stderr
    assert "results in" not in run.stderr


def test_a_bug_after_the_first_rollout_is_a_traceback_and_the_rows_stay(
    chance_dir, chance_server, standin, tmp_path
) -> None:
    """A user's adapter subclass whose close() raises: a bug, not a configuration."""
    package = tmp_path / "buggy_chance"
    shutil.copytree(chance_dir, package)
    with (package / "__init__.py").open("a") as fh:
        fh.write(
            "\n\nclass BuggyEnv(ChanceEnv):\n"
            "    def close(self):\n"
            "        super().close()\n"
            "        raise ValueError('a bug in the user adapter')\n"
        )
    out = tmp_path / "run"
    args = _args(package, chance_server, standin()) + ["--env-class", "BuggyEnv"]
    run = run_eval(args + ["--split", "test", "-n", "2", "--out", str(out)])
    assert run.returncode == 1, run.stderr
    assert "Traceback (most recent call last)" in run.stderr
    assert run.stderr.strip().splitlines()[-1] == "ValueError: a bug in the user adapter"
    assert sorted((r["task_index"], r["sample"]) for r in _rows(out)) == [
        (t, s) for t in range(CHANCE_TEST_TASKS) for s in range(2)
    ]


def test_records_are_slim_transcripts_come_from_the_file_and_graded_text_is_whole(
    chance_dir, chance_server, standin, tmp_path
) -> None:
    from conftest import import_generated
    from orsgen.eval import EvalConfig, evaluate
    from orsgen.eval.conversation import MAX_TOOL_ARGUMENTS, MAX_TOOL_OUTPUT

    pkg = import_generated(chance_dir)
    size = 3000  # longer than each limit
    model = standin(size=size)
    result = evaluate(  # no task count: the split's size comes from the environment
        pkg.ChanceEnv,
        EvalConfig(endpoint=model.endpoint, model=model.model, split="test", n=2),
        adapter={"base_url": chance_server.url},
        out=tmp_path / "run",
        progress=False,
    )
    assert isinstance(result.config, EvalConfig)
    assert result.config.task_indices == tuple(range(CHANCE_TEST_TASKS))
    assert result.config.split == "test" and result.config.n == 2
    assert result.config == EvalConfig.load(tmp_path / "run")
    assert sorted((r.task_index, r.sample) for r in result.records) == [
        (t, s) for t in range(CHANCE_TEST_TASKS) for s in range(2)
    ]
    assert not hasattr(result.records[0], "messages")  # transcripts stay on disk
    row = result.transcript(2, 1)
    assert row is not None and (row["task_index"], row["sample"]) == (2, 1)
    prompt, call, output = row["messages"]  # say() ends the episode
    assert prompt["content"] == "Say 'elder'."
    arguments = call["tool_calls"][0]["function"]["arguments"]
    sent = len(json.dumps({"text": "x" * size}))
    assert arguments.startswith('{"text": "lorem ipsum') and len(arguments) < sent
    assert arguments.endswith(f"... ({sent - MAX_TOOL_ARGUMENTS} more characters)")
    said = len("said: ") + size
    assert output["content"].startswith("said: lorem ipsum")
    assert output["content"].endswith(f"... ({said - MAX_TOOL_OUTPUT} more characters)")
    assert sum(1 for _ in result.transcripts()) == len(result.records)
    # On "open" the episode never finishes: the model's final answer ends it, whole.
    result = evaluate(
        pkg.ChanceEnv,
        EvalConfig(endpoint=model.endpoint, model=model.model, split="open"),
        adapter={"base_url": chance_server.url},
        out=tmp_path / "open",
        progress=False,
    )
    row = result.transcript(0)
    assert row is not None and [m["role"] for m in row["messages"]][-1] == "assistant"
    assert len(row["messages"][-1]["content"]) == size  # the graded text is never cut


def test_adapters_are_closed_when_resume_checking_raises(
    chance_dir, chance_server, standin, tmp_path
) -> None:
    from conftest import counted_adapters, import_generated
    from orsgen.eval import EvalConfig, RunFileError, evaluate

    factory, made, closed = counted_adapters(
        import_generated(chance_dir).ChanceEnv, chance_server.url
    )

    model = standin()
    one = EvalConfig(endpoint=model.endpoint, model=model.model, split="test", num_tasks=1)
    out = tmp_path / "run"
    evaluate(factory, one, out=out, progress=False)
    assert made and len(closed) == len(made)
    two = EvalConfig(endpoint=model.endpoint, model=model.model, split="test", num_tasks=2)
    for config, resume in ((two, True), (one, False)):  # changed; no --resume
        made.clear()
        closed.clear()
        with pytest.raises(RunFileError):
            evaluate(factory, config, out=out, resume=resume, progress=False)
        assert made and len(closed) == len(made), (config, resume)


@pytest.fixture(scope="module")
def judge_server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(JUDGE_ENV)


def test_a_group_judge_error_is_the_reason_on_each_row(
    judge_server, generate_package, standin, tmp_path
) -> None:
    pkg = generate_package("judge_errors", judge_server.url, class_name="JudgeEnv")
    model = standin(tool="guess", argument="word")
    out = tmp_path / "run"
    args = _args(Path(pkg.__file__).parent, judge_server, model)
    run = run_eval(args + ["--split", "broken", "-n", "3", "--out", str(out)])
    assert run.returncode == 0, run.stderr
    rows = _rows(out)
    assert len(rows) == 3
    for row in rows:
        assert row["verdict"] == "unfinished" and row["group_reward"] is None
        assert "group judge: score_group on" in row["reason"], row["reason"]
        assert "the judge is down" in row["reason"], row["reason"]


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_past_fifty_tasks_the_pass_rates_are_a_histogram(
    ors_servers, generate_package, standin, tmp_path
) -> None:
    server = ors_servers(LOTTERY_ENV)  # 60 tasks
    pkg = generate_package("lottery_report", server.url, class_name="LotteryEnv")
    out = tmp_path / "run"
    model = standin(tool="draw")
    run = run_eval(_args(Path(pkg.__file__).parent, server, model) + ["--out", str(out)])
    assert run.returncode == 0, run.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tasks"] == 60 and summary["coverage"] == 1.0
    assert "![pass@1 of the tasks](pass_rate.png)" in (out / "report.md").read_text()
    width, _ = _png_size(out / "pass_rate.png")
    assert width <= 800, width  # one bar per task: over 3,000 px at 60 tasks

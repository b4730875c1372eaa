"""``orsgen eval`` on an environment that judges groups itself (ORS ``score_group``,
tests/envs/judge_env.py): each task's samples are judged together, as ``group_reward``
does in training. Real ORS server, real ``transformers serve`` of the tiny model."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

import openai_standin
import ors_server
from conftest import ENVS, eval_args, results_rows, run_eval
from serve_model import ModelServer, start_model_server

JUDGE_ENV = ENVS / "judge_env.py"
TARGETS = ["apple", "banana"]  # tests/envs/judge_env.py's tasks

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def judge_server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(JUDGE_ENV)


@pytest.fixture(scope="module")
def judge_pkg(
    judge_server: ors_server.RunningServer, generate_package: Callable[..., ModuleType]
) -> ModuleType:
    return generate_package("judge_eval", judge_server.url, class_name="JudgeEnv")


@pytest.fixture(scope="module")
def judge_model(
    judge_pkg: ModuleType, judge_server: ors_server.RunningServer, tmp_path_factory
) -> Iterator[ModelServer]:
    from tiny_model import Episode, build_tiny_model

    adapter = judge_pkg.JudgeEnv(base_url=judge_server.url)  # no I/O: its methods only
    episodes = [Episode(f"Say a word close to {t!r}.", {"word": t}, "ok") for t in TARGETS]
    out = tmp_path_factory.mktemp("judge-model")
    model_dir = build_tiny_model(out, tools=[adapter.guess], episodes=episodes, tool_name="guess")
    server = start_model_server(model_dir, out)
    try:
        yield server
    finally:
        server.stop()


def _judge(target: str, answers: list[str]) -> list[float]:
    """tests/envs/judge_env.py's score_group, on the answers the rows record."""
    raw = [len(set(target) & set(a)) / len(set(target)) for a in answers]
    best = max(raw) or 1.0
    return [r / best for r in raw]


@pytest.mark.slow  # the tiny model served
def test_each_tasks_samples_are_judged_as_a_group(
    judge_pkg, judge_server, judge_model, tmp_path
) -> None:
    from orsgen.eval import EvalConfig, evaluate

    judge_server.reset_counts()
    result = evaluate(
        judge_pkg.JudgeEnv,
        EvalConfig(endpoint=judge_model.endpoint, model=judge_model.model, n=3),
        adapter={"base_url": judge_server.url},
        concurrency=2,
        out=tmp_path / "run",
        progress=False,
    )
    rows = [
        json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    ]
    assert sorted((r["task_index"], r["sample"]) for r in rows) == [
        (t, s) for t in range(len(TARGETS)) for s in range(3)
    ]
    for task, target in enumerate(TARGETS):
        group = sorted((r for r in rows if r["task_index"] == task), key=lambda r: r["sample"])
        answers = [
            next(m["content"] for m in reversed(r["messages"]) if m["role"] == "assistant")
            for r in group
        ]
        expected = _judge(target, answers)
        assert [r["group_reward"] for r in group] == pytest.approx(expected), group
        assert [r["reward"] for r in group] == pytest.approx(expected)
        assert {r["verdict"] for r in group} == {"scored"}
    calls = judge_server.requests()
    assert sum(v for k, v in calls.items() if "score_group" in k) == len(TARGETS), calls
    assert result.coverage == 1.0


@pytest.mark.slow  # seconds of real processes; the fast tier stays under 4 min
def test_a_resume_runs_an_incomplete_group_again_whole(
    judge_pkg: ModuleType, judge_server: ors_server.RunningServer, tmp_path: Path
) -> None:
    """Issue 39: a kill between a group's rows left part of it on disk. The resume removes
    those rows and runs the whole group again, so the judge judges n candidates, never the
    missing ones alone."""
    model = openai_standin.start(tmp_path, tool="guess", argument="word")
    try:
        out = tmp_path / "run"
        args = eval_args(Path(judge_pkg.__file__).parent, judge_server, model)
        args += ["-n", "3", "--out", str(out)]
        assert run_eval(args)[0] == 0
        rows = results_rows(out)
        kept = [r for r in rows if r["task_index"] == 1] + [
            {**r, "kept": True} for r in rows if r["task_index"] == 0 and r["sample"] < 2
        ]
        (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
        (out / "summary.json").unlink()
        judge_server.reset_counts()
        code, _, err = run_eval([*args, "--resume"])
        assert code == 0 and "3 of 6 rollouts left" in err, err
    finally:
        model.stop()
    rows = results_rows(out)
    assert sorted((r["task_index"], r["sample"]) for r in rows) == [
        (t, s) for t in range(2) for s in range(3)
    ]
    assert not [r for r in rows if r.get("kept")]  # the part written before: run again
    calls = judge_server.requests()
    assert sum(v for k, v in calls.items() if "score_group" in k) == 1, calls
    assert json.loads((out / "summary.json").read_text())["rollouts"] == 6

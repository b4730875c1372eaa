"""``orsgen replay`` (issue 41): a recorded evaluation replayed against the environment,
through the CLI, on tests/envs/replay_env.py, whose behaviour each test switches at the
server's start (``REPLAY_ENV``). The recording: ``orsgen eval`` with the scripted stand-in
(``openai_standin.py --quote 2``: each call echoes the prompt's word, reversed on some
seeds), 4 tasks x n=2, each rollout 1 or 2 calls of ``echo``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import runpy
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import openai_standin
import ors_server
from conftest import ENVS, CliRun, eval_args, results_rows, run_eval

REPLAY_ENV = ENVS / "replay_env.py"
SECRET, KEY = "s3cr3t-value", "k3y-value"


@pytest.fixture(scope="module")
def base(ors_servers: ors_server.Servers) -> Iterator[ors_server.RunningServer]:
    server = ors_servers.own(REPLAY_ENV)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def package(base: ors_server.RunningServer, generate_package: Callable[..., ModuleType]) -> Path:
    return Path(generate_package("replay_pkg", base.url, class_name="ReplayEnv").__file__).parent


@pytest.fixture(scope="module")
def recorded(
    base: ors_server.RunningServer, package: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    where = tmp_path_factory.mktemp("replay")
    model = openai_standin.start(where, tool="echo", argument="text", calls=2, quote=2)
    try:
        out = where / "run"
        args = [*eval_args(package, base, model), "-n", "2", "--seed", "3", "--out", str(out)]
        code, _, err = run_eval(args)
    finally:
        model.stop()
    assert code == 0, err
    return out


def server(
    ors_servers: ors_server.Servers, mode: str, monkeypatch: Any
) -> ors_server.RunningServer:
    """A server of replay_env.py started with ``REPLAY_ENV=mode`` (read once, at its start)."""
    monkeypatch.setenv("REPLAY_ENV", mode)
    return ors_servers.own(REPLAY_ENV)


def replay(cli: Callable[..., CliRun], run: Path, url: str, out: Path, *more: str) -> CliRun:
    return cli(["replay", str(run), "--out", str(out), "--base-url", url, *more])


def summary(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "summary.json").read_text()))


def pairs(found: list[dict[str, Any]]) -> set[tuple[int, int]]:
    return {(k["task_index"], k["sample"]) for k in found}


@pytest.mark.slow  # orsgen processes and servers; the fast tier stays under 4 min
def test_rows_record_each_call_and_result_and_run_json_the_package(
    recorded: Path, package: Path
) -> None:
    image = base64.b64decode(runpy.run_path(str(REPLAY_ENV))["_png"]())
    png = hashlib.sha256(image).hexdigest()
    rows = results_rows(recorded)
    assert len(rows) == 8
    for row in rows:
        calls = row["env_calls"]
        assert 1 <= len(calls) <= 2
        for call in calls:
            word = call["arguments"]["text"]
            assert call["tool"] == "echo" and call["text"].startswith(f"echo: {word}")
            assert call["finished"] == (call["reward"] == 1.0)
            assert call["images"] == ([png] if row["task_index"] == 3 else [])
        assert row["reward"] == calls[-1]["reward"]
    run = json.loads((recorded / "run.json").read_text())
    assert not Path(run["package"]).is_absolute() and run["package_name"] == package.name
    assert (recorded / run["package"]).resolve() == package.resolve()


@pytest.mark.slow  # orsgen processes and servers; the fast tier stays under 4 min
def test_the_same_environment_replays_with_no_change(
    recorded: Path, base: ors_server.RunningServer, orsgen_subprocess: Any, tmp_path: Path
) -> None:
    out = tmp_path / "same"
    run = replay(orsgen_subprocess, recorded, base.url, out, "--concurrency", "3")
    assert run.code == 0, run.stderr
    s = summary(out)
    assert (s["rollouts"], s["replayed"], s["changed"], s["rewards_changed"]) == (8, 8, 0, 0)
    assert s["flips"] == {"pass_to_fail": [], "fail_to_pass": []}
    assert (s["outputs_changed"], s["refused"], s["finished_elsewhere"]) == (0, [], [])
    rows = results_rows(out)
    assert pairs(rows) == pairs(results_rows(recorded))
    assert all(r["reward"] == r["recorded_reward"] and not r["nondeterministic"] for r in rows)


@pytest.mark.slow  # a server of its own, and a replay process
def test_a_changed_grader_flips_exactly_its_tasks_rollouts(
    recorded: Path, ors_servers: Any, orsgen_subprocess: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    changed = server(ors_servers, "changed", monkeypatch)  # task 1's grader inverted
    try:
        out = tmp_path / "changed"
        run = replay(orsgen_subprocess, recorded, changed.url, out)
    finally:
        changed.stop()
    assert run.code == 1, run.stderr
    assert run.stderr.strip().splitlines()[-1].startswith("orsgen replay: error:")
    s = summary(out)
    flips = pairs(s["flips"]["pass_to_fail"]) | pairs(s["flips"]["fail_to_pass"])
    assert flips == {(1, 0), (1, 1)}
    assert s["rewards_changed"] == 2 and s["outputs_changed"] == 0
    report = (out / "report.md").read_text()
    assert "### task 1, sample 0: reward" in report and "### task 0" not in report
    view = orsgen_subprocess(["view", str(out)])
    assert view.code == 0, view.stderr
    assert '"sides":[' in (out / "view.html").read_text()


@pytest.mark.slow  # a server of its own, and a replay process
def test_a_grader_that_does_not_repeat_itself_is_nondeterministic_under_repeat(
    recorded: Path, ors_servers: Any, orsgen_subprocess: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    noisy = server(ors_servers, "random", monkeypatch)  # task 2's reward random
    try:
        out = tmp_path / "noisy"
        run = replay(orsgen_subprocess, recorded, noisy.url, out, "--repeat", "3")
    finally:
        noisy.stop()
    assert run.code == 0, run.stderr
    s = summary(out)
    assert pairs(s["nondeterministic"]) == {(2, 0), (2, 1)}
    assert s["changed"] == 0 and s["flips"] == {"pass_to_fail": [], "fail_to_pass": []}
    assert all(len(r["replay_rewards"]) == 3 for r in results_rows(out))


@pytest.mark.slow  # a server of its own, and a replay process
def test_a_renamed_parameter_is_a_refused_call_with_its_reason(
    recorded: Path, ors_servers: Any, orsgen_subprocess: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    renamed = server(ors_servers, "renamed", monkeypatch)  # echo(text) is now echo(word)
    try:
        out = tmp_path / "renamed"
        run = replay(orsgen_subprocess, recorded, renamed.url, out)
    finally:
        renamed.stop()
    assert run.code == 1, run.stderr
    refused = summary(out)["refused"]
    rows = results_rows(recorded)
    every = {
        (r["task_index"], r["sample"], i) for r in rows for i in range(1, len(r["env_calls"]) + 1)
    }
    assert {(x["task_index"], x["sample"], x["call"]) for x in refused} == every
    assert all(x["tool"] == "echo" for x in refused)
    assert all("rejected the call" in x["reason"] and "word" in x["reason"] for x in refused)


@pytest.mark.slow  # a server of its own, and a replay process
def test_secrets_and_keys_are_never_written(
    recorded: Path, base: ors_server.RunningServer, orsgen_subprocess: Any, tmp_path: Path
) -> None:
    out = tmp_path / "secret"
    more = ["--secret", f"TOKEN={SECRET}", "--api-key", KEY]
    run = replay(orsgen_subprocess, recorded, base.url, out, *more)
    assert run.code == 0, run.stderr
    for path in out.iterdir():
        text = path.read_bytes()
        assert SECRET.encode() not in text and KEY.encode() not in text, path


@pytest.mark.slow  # orsgen processes and servers; the fast tier stays under 4 min
def test_a_run_without_recorded_calls_or_package_is_refused_in_one_line(
    recorded: Path,
    base: ors_server.RunningServer,
    package: Path,
    orsgen_subprocess: Any,
    tmp_path: Path,
) -> None:
    old = tmp_path / "old"
    shutil.copytree(recorded, old)
    rows = [{k: v for k, v in r.items() if k != "env_calls"} for r in results_rows(recorded)]
    (old / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = replay(orsgen_subprocess, old, base.url, tmp_path / "a")
    assert run.code == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "records no tool calls to replay" in run.stderr

    moved = tmp_path / "moved"
    shutil.copytree(recorded, moved)
    config = json.loads((moved / "run.json").read_text())
    (moved / "run.json").write_text(json.dumps({**config, "package": str(tmp_path / "gone")}))
    run = replay(orsgen_subprocess, moved, base.url, tmp_path / "b")
    assert run.code == 2 and "--package" in run.stderr, run.stderr
    run = replay(orsgen_subprocess, moved, base.url, tmp_path / "c", "--package", str(package))
    assert run.code == 0, run.stderr


def _call(text: str, reward: float | None, finished: bool = False, **more: Any) -> dict[str, Any]:
    return {"tool": "echo", "arguments": {"text": text}, "text": text, "images": [],
            "reward": reward, "finished": finished, **more}  # fmt: skip


def test_rewards_within_the_tolerance_are_no_change_and_disagreeing_replays_no_flip() -> None:
    from orsgen.replay.compare import Replayed, row
    from orsgen.replay.summary import summarize

    recorded = {"task_index": 0, "sample": 0, "reward": 1.0, "verdict": "scored"}
    recorded["env_calls"] = [_call("a", 1.0, True)]
    near = Replayed(0.95, "scored", None, [_call("a", 0.95, True)])
    far = Replayed(0.0, "scored", None, [_call("b", 0.0, False), _call("a", 0.0, True)])
    within = row(recorded, [near], tolerance=0.1, threshold=1.0)
    assert not within["changed"] and within["outputs_changed"] == 0
    moved = row(recorded, [far], tolerance=0.1, threshold=1.0)
    assert moved["changed"] and moved["reward_changed"] and moved["outputs_changed"] == 1
    assert moved["finished_at"] == {"recorded": 1, "replayed": 2}
    noisy = row({**recorded, "sample": 1}, [far, near], tolerance=0.1, threshold=1.0)
    assert noisy["nondeterministic"] and not noisy["changed"]
    facts = {"pass_threshold": 1.0, "tolerance": 0.1}
    s = summarize([within, moved, noisy], facts)
    assert s["flips"] == {"pass_to_fail": [{"task_index": 0, "sample": 0}], "fail_to_pass": []}
    assert s["rewards_changed"] == 1 and s["nondeterministic"] == [{"task_index": 0, "sample": 1}]
    assert s["finished_elsewhere"] == [{"task_index": 0, "sample": 0, "recorded": 1, "replayed": 2}]

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
import os
import runpy
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from subprocess import PIPE
from types import ModuleType
from typing import Any

import pytest

import openai_standin
import ors_server
from conftest import ENVS, ROOT, CliRun, eval_args, results_rows, run_eval
from docs_blocks import blocks

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


# Each kind of change exits 1 and is named in summary.json and report.md; replays that
# disagree among themselves are no change when one of them is the recording (exit 0), and a
# change when none is (``--repeat`` never hides a regression).
KINDS = {
    "partial": ([], 1, "call_rewards_changed"),  # a call's reward, not the episode's
    "early": ([], 1, "finished_elsewhere"),
    "flaky": (["--repeat", "3"], 0, None),
    "drifting": (["--repeat", "3"], 1, "flips"),
}


@pytest.mark.slow  # a server of its own, and a replay process
@pytest.mark.parametrize("mode", sorted(KINDS))
def test_each_kind_of_change_exits_1_and_replays_that_include_the_recording_do_not(
    recorded: Path,
    ors_servers: Any,
    orsgen_subprocess: Any,
    tmp_path: Path,
    monkeypatch: Any,
    mode: str,
) -> None:
    more, code, kind = KINDS[mode]
    changed = server(ors_servers, mode, monkeypatch)
    try:
        out = tmp_path / mode
        run = replay(orsgen_subprocess, recorded, changed.url, out, *more)
    finally:
        changed.stop()
    assert run.code == code, run.stderr
    s, rows, report = summary(out), results_rows(out), (out / "report.md").read_text()
    two = [r for r in results_rows(recorded) if len(r["env_calls"]) == 2]
    if mode == "partial":  # each rollout's first call of two: 0.0 then, 0.5 now
        assert s["rewards_changed"] == 0 and s["flips"] == {"pass_to_fail": [], "fail_to_pass": []}
        moved = {(x["task_index"], x["sample"], x["call"]) for x in s["call_rewards_changed"]}
        assert moved == {(r["task_index"], r["sample"], 1) for r in two} != set()
        assert all((x["recorded"], x["replayed"]) == (0.0, 0.5) for x in s["call_rewards_changed"])
        assert all("call 1 reward 0.0 -> 0.5" in r["reason"] for r in rows if r["changed"])
        assert "call 1 (0.0 -> 0.5)" in report
    if mode == "early":  # a wrong first call now ends the episode
        assert pairs(s["finished_elsewhere"]) == pairs(two) != set()
        assert all(x["replayed"] == 1 for x in s["finished_elsewhere"])
    if mode in ("flaky", "drifting"):
        assert pairs(s["nondeterministic"]) == {(2, 0), (2, 1)}
        assert all(len(r["replay_rewards"]) == 3 for r in rows)
        assert "nondeterministic: task 2 sample 0, task 2 sample 1" in report
    if mode == "flaky":
        assert s["changed"] == 0 and s["flips"] == {"pass_to_fail": [], "fail_to_pass": []}
    if mode == "drifting":  # 0.5 and 0.25 in turn, never the recorded 1.0
        assert s["changed"] == 2 and s["rewards_changed"] == 2
        assert pairs(s["flips"]["pass_to_fail"]) == {(2, 0), (2, 1)}
        assert "pass to fail: task 2 sample 0, task 2 sample 1" in report
    if kind is not None:
        assert run.stderr.strip().splitlines()[-1].startswith("orsgen replay: error:")
        assert s[kind] and s["changed"] == sum(r["changed"] for r in rows) > 0


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
    # A run written before run.json's package was relative: its absolute path still reads.
    (moved / "run.json").write_text(json.dumps({**config, "package": str(package.resolve())}))
    run = replay(orsgen_subprocess, moved, base.url, tmp_path / "d")
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


def orsgen_process(args: list[str], cwd: Path = ROOT) -> subprocess.Popen[str]:
    """``python -m orsgen ARGS`` as its own process in ``cwd``, this checkout's code."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
    env.update({"OPENREWARD_DISABLE_UPDATE_CHECK": "1", "PYTHONPATH": str(ROOT)})
    command = [sys.executable, "-m", "orsgen", *args]
    return subprocess.Popen(command, cwd=cwd, env=env, stdout=PIPE, stderr=PIPE, text=True)


def ended(proc: subprocess.Popen[str], timeout: float = 300) -> tuple[int, str, str]:
    """``proc`` run to its end (killed past ``timeout``): (exit code, stdout, stderr)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    return proc.returncode, out, err


def recipe_steps() -> dict[str, list[str]]:
    """docs/replay.md's CI recipe: each job's ``run:`` steps, as the page writes them."""
    import yaml

    (recipe,) = [b for b in blocks(ROOT / "docs" / "replay.md") if b.language == "yaml"]
    jobs = yaml.safe_load(recipe.code)["jobs"]
    return {name: [s["run"] for s in job["steps"] if "run" in s] for name, job in jobs.items()}


def run_step(script: str, cwd: Path, bin_dir: Path) -> tuple[int, str]:
    """One ``run:`` step in bash, with ``orsgen`` and ``pytest`` this checkout's; a server the
    step left in the background is stopped by its PID when the step ends."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
    env.update({"OPENREWARD_DISABLE_UPDATE_CHECK": "1", "PYTHONPATH": str(ROOT)})
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    wrapped = "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + script
    done = subprocess.run(["bash", "-c", wrapped], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    return done.returncode, done.stdout + done.stderr


@pytest.mark.slow  # an evaluation, a server, the recipe's steps and a replay of the served recording
def test_the_ci_recipe_runs_as_written_from_a_copy_of_the_recording_in_another_directory(
    base: ors_server.RunningServer, package: Path, tmp_path: Path
) -> None:
    made = tmp_path / "made"  # the recording machine's checkout
    shutil.copytree(package, made / "generated" / "echo")
    (made / "recordings").mkdir()
    model = openai_standin.start(tmp_path, tool="echo", argument="text", calls=2, quote=2)
    try:
        out = made / "recordings" / "echo"
        code, _, err = run_eval([*eval_args(made / "generated" / "echo", base, model), "-n", "1",
                                 "--out", str(out)])  # fmt: skip
    finally:
        model.stop()
    assert code == 0, err
    checkout = tmp_path / "checkout"  # another machine's: the recording's directory is gone
    made.rename(checkout)
    # The user's training tests the offline job runs against the served recording.
    (checkout / "tests").mkdir()
    (checkout / "generated" / "__init__.py").write_text("")  # as in this repository
    (checkout / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    (checkout / "tests" / "test_training.py").write_text(
        "import json, os\n"
        "from generated.echo import ReplayEnv\n\n"
        "def test_a_rollout_against_the_recording() -> None:\n"
        '    split = json.load(open("recordings/echo/run.json"))["split"]\n'
        '    env = ReplayEnv(base_url=os.environ["ORS_URL"])\n'
        "    assert env.reset(task_index=0, split=split)\n"
        "    env.close()\n"
    )
    bin_dir = tmp_path / "bin"  # `orsgen` and `pytest` on PATH: this checkout's code
    bin_dir.mkdir()
    for name, module in (("orsgen", "orsgen"), ("pytest", "pytest")):
        (bin_dir / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {module} "$@"\n')
        (bin_dir / name).chmod(0o755)
    steps = recipe_steps()
    assert set(steps) == {"offline", "drift"}
    ran = []
    for job in ("offline", "drift"):
        for step in steps[job]:
            if step.startswith("pip install"):
                continue  # installed already: this environment is the one pip would make
            code, output = run_step(step, checkout, bin_dir)
            assert code == 0, f"{job}: {step}\n{output}"
            ran.append(step.split()[:2])
    assert ["orsgen", "serve"] in ran and ["orsgen", "replay"] in ran, ran
    assert summary(checkout / "replay")["replayed"] == 4
    served = orsgen_process(["serve", "recordings/echo"], cwd=checkout)
    try:
        assert served.stdout is not None
        url = served.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), ended(served, 10)
        offline = ended(orsgen_process(["replay", "recordings/echo", "--out", "offline",
                                        "--base-url", url], cwd=checkout))  # fmt: skip
    finally:
        served.terminate()
        code, _, err = ended(served, 30)
    assert code == 0, err
    assert offline[0] == 0, offline[2]  # the served recording is the recording
    for run in ("recordings/echo", "offline", "replay"):
        for name in ("run.json", "summary.json", "report.md"):
            text = (checkout / run / name).read_text()
            assert str(tmp_path) not in text and str(ROOT) not in text, f"{run}/{name}"
    config = json.loads((checkout / "recordings/echo/run.json").read_text())
    assert (config["package"], config["package_name"]) == ("../../generated/echo", "echo")


@pytest.mark.slow  # two servers of its own and three replay processes
def test_sigterm_and_ctrl_c_stop_a_replay_at_once_and_a_rerun_continues_it(
    recorded: Path,
    base: ors_server.RunningServer,
    ors_servers: Any,
    orsgen_subprocess: Any,
    tmp_path: Path,
    monkeypatch: Any,
) -> None:
    mark, out = tmp_path / "mark", tmp_path / "out"
    monkeypatch.setenv("REPLAY_ENV_MARK", str(mark))
    rows = results_rows(recorded)
    first = next(i for i, r in enumerate(rows) if r["task_index"] == 2)
    before = pairs(rows[:first])  # replayed (one at a time) before task 2's minute-long call
    for sig in (signal.SIGTERM, signal.SIGINT):
        mark.unlink(missing_ok=True)
        slow = server(ors_servers, "slow", monkeypatch)
        try:
            proc = orsgen_process(["replay", str(recorded), "--out", str(out), "--base-url",
                                   slow.url])  # fmt: skip
            try:
                while not mark.exists():  # task 2's call is under way
                    assert proc.poll() is None, proc.communicate()
                    time.sleep(0.05)
                proc.send_signal(sig)
            finally:
                code, _, err = ended(proc, 30)  # not the minute the call takes
        finally:
            slow.stop()
        assert code == 128 + sig, err
        last = err.strip().splitlines()[-1]
        assert "interrupted" in last and "continues the replay" in last, err
        s = summary(out)
        assert s["interrupted"] and s["replayed"] == len(before), s
        assert pairs(results_rows(out)) == before and len(results_rows(out)) == len(before)
    run = replay(orsgen_subprocess, recorded, base.url, out)  # the environment as it was
    assert run.code == 0, run.stderr
    s = summary(out)
    assert s["replayed"] == s["rollouts"] == 8 and not s.get("interrupted") and s["changed"] == 0
    done = [(r["task_index"], r["sample"]) for r in results_rows(out)]
    assert sorted(done) == sorted(pairs(rows)) and len(done) == 8
    again = replay(orsgen_subprocess, recorded, base.url, out)
    assert again.code == 2 and "finished replay" in again.stderr, again.stderr


@pytest.mark.slow  # an evaluation whose model is slow, and a replay process
def test_a_rollout_that_timed_out_is_compared_call_by_call_with_the_recorded_settings(
    base: ors_server.RunningServer, package: Path, orsgen_subprocess: Any, tmp_path: Path
) -> None:
    # Each answer takes 2 s: a rollout's first call is made, its second answer comes after
    # the 3.5 s rollout deadline. A recorded rollout that timed out ends on unfinished_reward,
    # whatever its calls scored; replayed, its calls score as they did.
    model = openai_standin.start(tmp_path, tool="echo", argument="text", calls=2, quote=2,
                                 delay=2.0)  # fmt: skip
    try:
        recorded = tmp_path / "slow"
        more = ["-n", "2", "--seed", "3", "--concurrency", "8", "--rollout-timeout", "3.5"]
        code, _, err = run_eval([*eval_args(package, base, model), *more, "--out", str(recorded)])
    finally:
        model.stop()
    assert code == 0, err
    rows = results_rows(recorded)
    late = pairs([r for r in rows if r["stop"] == "timeout"])
    assert late and late != pairs(rows), [r["stop"] for r in rows]
    out = tmp_path / "replayed"
    run = replay(orsgen_subprocess, recorded, base.url, out)
    assert run.code == 0, run.stderr
    s = summary(out)
    assert pairs(s["compared_by_calls"]) == late and s["changed"] == 0
    assert json.loads((out / "run.json").read_text())["rollout_timeout"] == 3.5
    for r in results_rows(out):
        timed_out = (r["task_index"], r["sample"]) in late
        assert ("stopped on timeout" in (r["reason"] or "")) == timed_out, r["reason"]
    assert "compared call by call (stopped on a limit): task" in (out / "report.md").read_text()


def test_a_trajectory_file_replays_its_results_by_hash(
    echo_server: ors_server.RunningServer, orsgen_cli: Any, tmp_path: Path
) -> None:
    # A training adapter's trajectory sink (no trainer: the adapter driven as TRL drives it),
    # one rollout with a call whose arguments (3,000 characters) and result pass the old
    # writer's cuts. b.jsonl is its copy with the long result's hash that of its preview (as
    # if the preview were the whole text): the one output that changed.
    from generated.echo import EchoEnv
    from orsgen.runtime.rewards import outcome_reward
    from orsgen.runtime.trajectories import writer

    runs, long = tmp_path / "runs", "x" * 3000
    env = EchoEnv(base_url=echo_server.url, trajectories=runs / "a.jsonl")
    try:
        env.reset(task_index=0)
        env.echo(text=long)
        env.echo(text="apple")
        assert outcome_reward([env]) == [1.0]
    finally:
        env.close()
        writer.writers().close()
    line = json.loads((runs / "a.jsonl").read_text())
    first = line["calls"][0]
    assert first["arguments"] == {"text": long} and first["truncated"] is True
    assert len(first["output"]) == 500 and line["package_name"] == "echo"
    assert (runs / line["package"]).resolve() == (ROOT / "generated" / "echo").resolve()
    preview = hashlib.sha256(first["output"].encode()).hexdigest()
    assert first["output_sha256"] != preview
    line["calls"][0] = {**first, "output_sha256": preview}
    (runs / "b.jsonl").write_text(json.dumps(line) + "\n")

    out = tmp_path / "replayed"
    run = replay(orsgen_cli, runs, echo_server.url, out)  # in this process: no SDK import
    assert run.code == 0, run.stderr
    s = summary(out)
    assert (s["rollouts"], s["replayed"], s["changed"], s["outputs_changed"]) == (2, 2, 0, 1)
    rows = sorted(results_rows(out), key=lambda r: r["sample"])
    assert [(r["task_index"], r["sample"], r["outputs_changed"]) for r in rows] == [
        (0, 0, 0),
        (0, 1, 1),
    ]
    assert all(r["reward"] == r["recorded_reward"] == 1.0 for r in rows)

    # A trajectory file of an older orsgen (no hash, no package: tests/fixtures/runs_v0).
    old = ROOT / "tests" / "fixtures" / "runs_v0" / "train.jsonl"
    echo = str(ROOT / "generated" / "echo")
    run = replay(orsgen_cli, old, echo_server.url, tmp_path / "old", "--package", echo)
    assert run.code == 0, run.stderr
    assert (summary(tmp_path / "old")["rollouts"], summary(tmp_path / "old")["changed"]) == (3, 0)


def test_a_replay_writes_summary_json_last(
    echo_server: ors_server.RunningServer, orsgen_cli: Any, tmp_path: Path
) -> None:
    # A replay whose report.md cannot be written (a directory is in its place) never looks
    # finished: report.md comes before summary.json, as eval's and merge's do.
    out, old = tmp_path / "blocked", ROOT / "tests" / "fixtures" / "runs_v0" / "train.jsonl"
    (out / "report.md").mkdir(parents=True)
    with pytest.raises(IsADirectoryError):
        replay(orsgen_cli, old, echo_server.url, out, "--package", str(ROOT / "generated" / "echo"))
    assert (out / "results.jsonl").is_file() and not (out / "summary.json").exists()

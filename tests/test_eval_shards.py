"""Shards of an evaluation (``orsgen eval --shard I/N``, ``EvalConfig(shard=...)``) and their
merge (``orsgen merge SHARD... --out RUN``, ``orsgen/eval/merge.py``), issue 36:
three shards merged are the unsharded run (the same (task, sample) pairs, the same rows,
the same summary.json apart from timing), the SLURM script of the docs run as SLURM runs it,
and every merge refusal in one line. The endpoint is deterministic: the scripted stand-in
(tests/openai_standin.py ``--quote``) echoes the word the prompt quotes, or a wrong word on
the requests whose seed (one per task, sample and turn, from ``--seed``) it picks, against
the real echo server (examples/echo_env.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import openai_standin
import ors_server
from conftest import ROOT, eval_process, results_rows, run_eval

from orsgen.eval import EvalConfig, EvalConfigError, EvalResult, evaluate, merge_shards
from orsgen.eval.command import load_adapter

ECHO = ROOT / "generated" / "echo"
SLURM = ROOT / "examples" / "slurm_eval.sh"
SEED, N, SHARDS = 11, 3, 3  # echo's test split: 4 tasks, 12 rollouts

pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize("count", range(1, 8))
@pytest.mark.parametrize("tasks", [(5,), (3, 1, 2), tuple(range(10)), (9, 0, 4, 7, 2, 8, 1)])
def test_the_shards_parts_are_disjoint_whole_and_balanced(
    tasks: tuple[int, ...], count: int
) -> None:
    config = EvalConfig(model="m", endpoint="http://e/v1", task_indices=tasks)
    parts = [dataclasses.replace(config, shard=(i, count)).tasks() for i in range(count)]
    assert sorted(t for part in parts for t in part) == sorted(tasks)  # whole and disjoint
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    for part in parts:  # each in the run's order
        assert list(part) == [t for t in tasks if t in part]


@pytest.mark.parametrize(
    ("shard", "said"),
    [
        ("3/3", "3/3 is not a shard I/N with 0 <= I < N"),
        ("-1/3", "-1/3 is not a shard"),
        ("0/0", "0/0 is not a shard"),
        ("1of3", "takes I/N"),
    ],
)
def test_a_bad_shard_is_one_line_before_any_network(shard: str, said: str, tmp_path: Path) -> None:
    closed = "http://127.0.0.1:9/v1"  # nothing listens: an endpoint check would say so
    code, out, err = run_eval(
        [str(ECHO), "--endpoint", closed, "--model", "m", f"--shard={shard}"], timeout=60
    )
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and err.startswith("orsgen eval: error: argument --shard:"), err
    assert said in err, err
    with pytest.raises(EvalConfigError, match="shard"):
        EvalConfig(model="m", endpoint=closed, shard=(3, 3))


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai_standin.Standin]:
    logs = tmp_path_factory.mktemp("standin")
    server = openai_standin.start(logs, tool="echo", argument="text", quote=3)
    try:
        yield server
    finally:
        server.stop()


def _evaluate(
    standin: openai_standin.Standin, server: ors_server.RunningServer, out: Path, **fields: Any
) -> EvalResult:
    config = EvalConfig(
        model=standin.model, endpoint=standin.endpoint, split="test", n=N, seed=SEED, **fields
    )
    klass = load_adapter(str(ECHO), None)
    return evaluate(klass, config, adapter={"base_url": server.url}, out=out, progress=False)


@pytest.fixture(scope="module")
def runs(
    standin: openai_standin.Standin,
    echo_server: ors_server.RunningServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    """``whole`` (the run unsharded) and ``shard-0`` .. ``shard-2``, each its own run."""
    root = tmp_path_factory.mktemp("runs")
    _evaluate(standin, echo_server, root / "whole")
    for i in range(SHARDS):
        _evaluate(standin, echo_server, root / f"shard-{i}", shard=(i, SHARDS))
    return root


def _merge(*args: str | Path) -> tuple[int, str, str]:
    proc = eval_process(list(map(str, args)), command="merge")
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def _untimed(summary: dict[str, Any]) -> dict[str, Any]:
    """summary.json without its timing figures (each tool's mean and p90 seconds)."""
    tools = {
        name: {k: v for k, v in figures.items() if not k.endswith("_s")}
        for name, figures in summary["tools"].items()
    }
    return {**summary, "tools": tools}


def _by_pair(run: Path) -> dict[tuple[int, int], tuple[Any, ...]]:
    return {
        (r["task_index"], r["sample"]): (r["verdict"], r["reward"], r["messages"])
        for r in results_rows(run)
    }


def _same_run(merged: Path, whole: Path) -> None:
    """``merged`` holds every row of ``whole`` once, as ``whole`` has it, and the same
    summary.json apart from timing."""
    rows = results_rows(merged)
    pairs = [(r["task_index"], r["sample"]) for r in rows]
    assert len(pairs) == len(set(pairs)) == 4 * N
    assert _by_pair(merged) == _by_pair(whole)
    summaries = [json.loads((run / "summary.json").read_text()) for run in (merged, whole)]
    assert _untimed(summaries[0]) == _untimed(summaries[1])
    configs = [json.loads((run / "run.json").read_text()) for run in (merged, whole)]
    # The package, relative to each run directory: one directory.
    where = {(run / c.pop("package")).resolve() for run, c in zip((merged, whole), configs)}
    assert len(where) == 1 and configs[0].pop("merged") == SHARDS and configs[0] == configs[1]
    assert (merged / "adapter.json").read_bytes() == (whole / "adapter.json").read_bytes()
    assert (merged / "report.md").is_file()
    # Each task's prompt once, every shard's copied (issue 45 item 6).
    prompts = [sorted((run / "prompts.jsonl").read_text().splitlines()) for run in (merged, whole)]
    assert prompts[0] == prompts[1] and len(prompts[0]) == 4, prompts


def test_three_shards_merged_are_the_unsharded_run(runs: Path, tmp_path: Path) -> None:
    whole = json.loads((runs / "whole" / "summary.json").read_text())
    assert 0 < whole["pass_at_k"]["1"] < 1 and whole["rollouts"] == 4 * N  # a run worth merging
    sizes = [json.loads((runs / f"shard-{i}" / "summary.json").read_text()) for i in range(3)]
    assert [s["tasks"] for s in sizes] == [2, 1, 1]  # each shard sums up its own tasks
    shards = [runs / f"shard-{i}" for i in (2, 0, 1)]  # any order
    code, out, err = _merge(*shards, "--out", tmp_path / "merged")
    assert code == 0, err
    assert out.startswith(f"{4 * N} rollouts on split 'test': coverage"), out
    _same_run(tmp_path / "merged", runs / "whole")
    again = merge_shards(shards, tmp_path / "library")  # the same through the library
    assert again.summary == json.loads((tmp_path / "merged" / "summary.json").read_text())


def test_a_shard_resumes_as_a_run(
    runs: Path, standin: openai_standin.Standin, echo_server: ors_server.RunningServer
) -> None:
    copy = runs / "resumed-0"
    shutil.copytree(runs / "shard-0", copy)
    results = copy / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text(lines[0] + lines[1][:20])  # one row, and a torn one
    (copy / "summary.json").unlink()
    config = EvalConfig(
        model=standin.model, endpoint=standin.endpoint, split="test", n=N, seed=SEED
    )
    klass = load_adapter(str(ECHO), None)
    with pytest.raises(EvalConfigError, match=r"shard was \[0, 3\] and is now .*: cannot resume"):
        evaluate(klass, config, adapter={"base_url": echo_server.url}, out=copy, resume=True)
    result = evaluate(
        klass,
        dataclasses.replace(config, shard=(0, SHARDS)),
        adapter={"base_url": echo_server.url},
        out=copy,
        resume=True,
        progress=False,
    )
    assert len(result.records) == 2 * N
    assert _by_pair(copy) == _by_pair(runs / "shard-0")
    # Its tasks' prompts once each: the resume wrote none again.
    prompts = [(run / "prompts.jsonl").read_text() for run in (copy, runs / "shard-0")]
    assert prompts[0] == prompts[1] and prompts[0].count("\n") == 2, prompts


def _one_line(code: int, out: str, err: str, *said: str) -> None:
    assert code == 2 and out == "", (code, out, err)
    assert err.count("\n") == 1 and err.startswith(
        ("orsgen eval: error: ", "orsgen merge: error: ")
    ), err
    for words in said:
        assert words in err, err


def test_merge_refuses_overlapping_shards(runs: Path, tmp_path: Path) -> None:
    again = tmp_path / "shard-1-again"
    shutil.copytree(runs / "shard-1", again)
    shards = [runs / f"shard-{i}" for i in range(SHARDS)]
    out = tmp_path / "merged"
    _one_line(*_merge(*shards, again, "--out", out), "both shard 1/3", str(again))
    _one_line(*_merge(*shards, shards[0], "--out", out), "both shard 0/3")
    assert not (out / "run.json").exists()


def test_merge_refuses_a_missing_shard_unless_partial(runs: Path, tmp_path: Path) -> None:
    two = [runs / "shard-0", runs / "shard-2"]
    out = tmp_path / "merged"
    _one_line(*_merge(*two, "--out", out), "shard 1/3 missing", "--partial")
    assert not (out / "results.jsonl").exists()
    code, printed, err = _merge(*two, "--out", out, "--partial")
    assert code == 0, err
    config = json.loads((out / "run.json").read_text())
    assert config["partial"] == {"shards": 3, "missing": [1]} and config["shard"] is None
    summary = json.loads((out / "summary.json").read_text())
    assert [t["task_index"] for t in summary["per_task"]] == [0, 2, 3]
    assert {(r["task_index"], r["sample"]) for r in results_rows(out)} == {
        (t, s) for t in (0, 2, 3) for s in range(N)
    }


def test_merge_refuses_shards_of_another_configuration(
    runs: Path,
    standin: openai_standin.Standin,
    echo_server: ors_server.RunningServer,
    tmp_path: Path,
) -> None:
    other = tmp_path / "shard-1-short"
    _evaluate(standin, echo_server, other, shard=(1, SHARDS), max_turns=4)
    out = tmp_path / "merged"
    code, printed, err = _merge(runs / "shard-0", other, runs / "shard-2", "--out", out)
    _one_line(code, printed, err, "--max-turns differs between the shards: 8 in", str(other))
    # Each field of the run's identity, changed in a copy's run.json:
    for field, value in [
        ("model", "another"),
        ("split", "train"),
        ("n", 4),
        ("tools_sha256", "0" * 64),
        ("pass_threshold", 0.5),
        ("environment", "other"),
        ("rollout_timeout", 5.0),
    ]:
        changed = tmp_path / f"shard-1-{field}"
        shutil.copytree(runs / "shard-1", changed)
        config = json.loads((changed / "run.json").read_text())
        (changed / "run.json").write_text(json.dumps({**config, field: value}))
        with pytest.raises(EvalConfigError, match=f"{field} differs between the shards") as e:
            merge_shards([runs / "shard-0", changed, runs / "shard-2"], out)
        assert e.value.field == field and "\n" not in str(e.value)
    split = tmp_path / "shard-1-of-4"
    shutil.copytree(runs / "shard-1", split)
    config = json.loads((split / "run.json").read_text())
    (split / "run.json").write_text(json.dumps({**config, "shard": [1, 4]}))
    _one_line(*_merge(runs / "shard-0", split, "--out", out), "shard 0/3 but", "shard 1/4")
    assert not out.exists() or not any(out.iterdir())


def test_merge_refuses_what_is_not_a_finished_shard(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "merged"
    shards = [runs / f"shard-{i}" for i in range(SHARDS)]
    _one_line(*_merge(tmp_path, "--out", out), "is not an orsgen eval run")
    _one_line(*_merge(runs / "whole", "--out", out), "is a run, not a shard")
    cut = tmp_path / "shard-2-cut"
    shutil.copytree(shards[2], cut)
    (cut / "summary.json").unlink()
    _one_line(*_merge(shards[0], shards[1], cut, "--out", out), "is unfinished", "--resume")
    short = tmp_path / "shard-2-short"
    shutil.copytree(shards[2], short)
    lines = (short / "results.jsonl").read_text().splitlines(keepends=True)
    (short / "results.jsonl").write_text("".join(lines[:-1]))
    code, printed, err = _merge(shards[0], shards[1], short, "--out", out)
    _one_line(code, printed, err, f"is unfinished ({N - 1} of {N} rollouts)", "--shard 2/3")
    assert not (out / "results.jsonl").exists() and not (out / "run.json").exists()
    _one_line(*_merge(*shards, "--out", shards[0]), "is one of the shards")
    _one_line(*_merge(*shards, "--out", runs / "whole"), "already holds a run")
    _one_line(*_merge(*shards), "the following arguments are required: --out")


@pytest.mark.slow  # five `orsgen eval` processes
def test_the_slurm_script_runs_the_shards_then_the_merge(
    runs: Path,
    standin: openai_standin.Standin,
    echo_server: ors_server.RunningServer,
    tmp_path: Path,
) -> None:
    """examples/slurm_eval.sh's body, as each array task and then the merge job run it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENREWARD_", "SLURM_"))}
    bin_dir = tmp_path / "bin"  # `orsgen` as this interpreter runs it, wherever it is installed
    bin_dir.mkdir()
    (bin_dir / "orsgen").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m orsgen "$@"\n')
    (bin_dir / "orsgen").chmod(0o755)
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(ROOT),
        OPENREWARD_DISABLE_UPDATE_CHECK="1",
        PACKAGE=str(ECHO),
        ENDPOINT=standin.endpoint,
        MODEL=standin.model,
        BASE_URL=echo_server.url,
        SPLIT="test",
        SAMPLES=str(N),
        RUNS=str(tmp_path / "runs"),
        EVAL_ARGS=f"--seed {SEED} --concurrency 2",
    )

    def body(**slurm: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(SLURM)],
            env={**env, **slurm},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )

    for i in range(SHARDS):
        done = body(SLURM_ARRAY_TASK_ID=str(i), SLURM_ARRAY_TASK_COUNT=str(SHARDS))
        assert done.returncode == 0, done.stderr
        assert f"shard {i}/{SHARDS}" in done.stderr, done.stderr
    again = body(SLURM_ARRAY_TASK_ID="1", SLURM_ARRAY_TASK_COUNT=str(SHARDS))  # requeued
    assert again.returncode == 0 and "is complete" in again.stderr, again.stderr
    merged = body()
    assert merged.returncode == 0, merged.stderr
    _same_run(tmp_path / "runs" / "merged", runs / "whole")


def test_the_docs_show_the_slurm_script_as_it_is() -> None:
    assert SLURM.read_text() in (ROOT / "docs" / "scale.md").read_text()


def _files(run: Path) -> dict[str, tuple[int, int]]:
    """Each run file's inode and mtime: what a rewrite would change."""
    return {
        p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in run.iterdir() if p.name != ".lock"
    }


@pytest.mark.slow  # orsgen processes and servers; the fast tier stays under 4 min
def test_a_killed_merge_is_completed_by_the_same_merge_and_never_appended_to(
    runs: Path, tmp_path: Path
) -> None:
    """Issue 39: what a killed merge left (its run.json, a half-written temporary file, an
    older orsgen's results.jsonl.tmp) is completed by the same merge, never appended to; a
    merge that finished says so and rewrites nothing (exit 0)."""
    shards = [runs / f"shard-{i}" for i in range(SHARDS)]
    out = tmp_path / "merged"
    assert _merge(*shards, "--out", out)[0] == 0
    for name in ("summary.json", "report.md", "results.jsonl"):  # killed before these
        (out / name).unlink()
    half = (runs / "whole" / "results.jsonl").read_bytes()[:500]
    (out / ".results.jsonl.killed.tmp").write_bytes(half)
    (out / "results.jsonl.tmp").write_bytes(half)
    code, printed, err = _merge(*shards, "--out", out)
    assert code == 0, err
    _same_run(out, runs / "whole")
    assert not (out / ".results.jsonl.killed.tmp").exists()
    before = _files(out)
    code, printed, err = _merge(*shards, "--out", out)
    assert code == 0 and "holds this merge, finished: nothing to do" in err, err
    assert printed.startswith(f"{4 * N} rollouts") and _files(out) == before


def test_merge_force_replaces_what_out_holds_and_nothing_else_does(
    runs: Path, tmp_path: Path
) -> None:
    shards = [runs / f"shard-{i}" for i in range(SHARDS)]
    out = tmp_path / "merged"
    shutil.copytree(runs / "shard-0", out)  # another run
    _one_line(*_merge(*shards, "--out", out), "already holds a run", "--force")
    code, printed, err = _merge(*shards, "--out", out, "--force")
    assert code == 0, err
    _same_run(out, runs / "whole")


@pytest.mark.slow  # orsgen processes and servers; the fast tier stays under 4 min
def test_a_run_directory_has_one_writer_named_by_pid_and_host(
    runs: Path, standin: openai_standin.Standin, echo_server: ors_server.RunningServer
) -> None:
    """The lock of orsgen.rundir: a merge or a resume into a run another process writes is
    refused in one line naming that process; the lock goes with its holder."""
    import socket

    from orsgen.rundir import writing

    shards = [runs / f"shard-{i}" for i in range(SHARDS)]
    out = runs / "locked"
    holder = f"pid {os.getpid()} on {socket.gethostname()}"
    args = [str(ECHO), "--endpoint", standin.endpoint, "--model", standin.model, "--seed"]
    args += [str(SEED), "--base-url", echo_server.url, "--split", "test", "-n", str(N)]
    with writing(out):
        _one_line(*_merge(*shards, "--out", out), f"{out} is being written by {holder}")
        _one_line(*run_eval([*args, "--out", str(out), "--resume"]), holder)
        assert not (out / "run.json").exists()
    code, printed, err = _merge(*shards, "--out", out)  # the lock went with its holder
    assert code == 0, err


def _echo_args(model: openai_standin.Standin, server: ors_server.RunningServer) -> list[str]:
    args = [str(ECHO), "--endpoint", model.endpoint, "--model", model.model, "--seed", str(SEED)]
    return args + ["--base-url", server.url, "--split", "test", "--no-progress"]


def _requests(run: Path) -> int:
    counts = json.loads((run / "run.json").read_text()).get("endpoint_counts", {})
    return sum(figures["requests"] for figures in counts.values())


@pytest.fixture
def killed_echo_server(ors_servers: ors_server.Servers) -> Iterator[ors_server.RunningServer]:
    """An echo server of the test's own: a run killed with rollouts in flight leaves their
    sessions open there, never on the shared one other tests count sessions on."""
    server = ors_servers.own(ROOT / "examples" / "echo_env.py")
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.slow  # seconds of real processes; the fast tier stays under 4 min
def test_sigterm_abandons_the_rollouts_in_flight_and_keeps_the_counts(
    killed_echo_server: ors_server.RunningServer, tmp_path: Path
) -> None:
    """Issue 39: SIGTERM (a preemption) ends the run at once: the rollouts under way get no
    row, run.json has the endpoint counts so far, and the resume adds its own to them."""
    model = openai_standin.start(tmp_path, tool="echo", argument="text", quote=3, delay=3)
    try:
        out = tmp_path / "run"
        args = [*_echo_args(model, killed_echo_server), "-n", "2", "--concurrency", "4"]
        args += ["--out", str(out)]
        proc = eval_process(args)
        try:
            while proc.poll() is None and len(_lines(out)) < 4:
                time.sleep(0.05)
            time.sleep(0.5)  # the next four rollouts are under way, 3 s from an answer
            written = len(_lines(out))
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()  # this test's own child, by its PID
                proc.wait()
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert written == 4 and len(_lines(out)) == 4, err  # in flight: no row
        assert "interrupted; the rows so far are in" in err and "Traceback" not in err, err
        first = _requests(out)
        assert first >= 4  # the four rows' requests at least
        time.sleep(3.5)  # the abandoned requests answered
        before = model.chat_requests()
        code, _, err = run_eval([*args, "--resume"])
        assert code == 0 and "4 of 8 rollouts left" in err, err
        assert _requests(out) == first + model.chat_requests() - before
        assert json.loads((out / "summary.json").read_text())["rollouts"] == 8
    finally:
        model.stop()


def _lines(run: Path) -> list[bytes]:
    path = run / "results.jsonl"
    return path.read_bytes().splitlines() if path.exists() else []


@pytest.mark.slow  # seconds of real processes; the fast tier stays under 4 min
def test_resume_starts_a_run_that_never_started_and_refuses_another_timeout(
    standin: openai_standin.Standin, echo_server: ors_server.RunningServer, tmp_path: Path
) -> None:
    """Issue 39: a requeued job runs the same command, --resume, on a directory its first
    run left empty; the rollout timeout is part of the run's identity (run.json), so a
    resume with another is refused, naming it."""
    out = tmp_path / "run"
    out.mkdir()
    args = [*_echo_args(standin, echo_server), "--num-tasks", "2", "--rollout-timeout", "60"]
    code, _, err = run_eval([*args, "--out", str(out), "--resume"])
    assert code == 0, err
    assert json.loads((out / "run.json").read_text())["rollout_timeout"] == 60
    code, _, err = run_eval([*args, "--out", str(out), "--resume", "--rollout-timeout", "5"])
    _one_line(code, "", err, "--rollout-timeout was 60.0 and is now 5.0: cannot resume")
    # (a merge of shards with another timeout: test_merge_refuses_shards_of_another_configuration)


@pytest.mark.slow  # orsgen processes and servers; the fast tier stays under 4 min
def test_two_resumes_at_once_one_runs_and_the_other_names_it(
    killed_echo_server: ors_server.RunningServer, tmp_path: Path
) -> None:
    """Issue 39: two `orsgen eval --resume` of one run: the second is refused in one line
    naming the first (pid and host), which Ctrl-C then ends at once (exit 130)."""
    import socket

    model = openai_standin.start(tmp_path, tool="echo", argument="text", delay=60)
    out = tmp_path / "run"
    args = [
        *_echo_args(model, killed_echo_server),
        "--num-tasks",
        "1",
        "--out",
        str(out),
        "--resume",
    ]
    first = eval_process(args)
    try:
        lock = out / ".lock"
        while first.poll() is None and not (lock.exists() and lock.read_text()):
            time.sleep(0.05)
        _one_line(*run_eval(args), f"is being written by pid {first.pid} on {socket.gethostname()}")
        first.send_signal(signal.SIGINT)
        _, err = first.communicate(timeout=60)
        assert first.returncode == 130 and "interrupted" in err, err
    finally:
        if first.poll() is None:
            first.kill()  # this test's own child, by its PID
            first.wait()
        model.stop()


def _modes(run: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in run.iterdir() if p.is_file()}


def _orsgen(args: list[str | Path], umask: int) -> tuple[int, str, str]:
    """``python -m orsgen ARGS`` run with ``umask``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
    done = subprocess.run(
        [sys.executable, "-m", "orsgen", *map(str, args)],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        umask=umask,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_every_file_of_a_run_honours_the_umask(
    umask: int,
    runs: Path,
    standin: openai_standin.Standin,
    echo_server: ors_server.RunningServer,
    tmp_path: Path,
) -> None:
    """Issue 45: a file written whole (a temporary file renamed) is as readable as any new
    file, never mkstemp's 0600: an evaluation's files (022), a merge's (027), and the page
    of ``orsgen view`` for each."""
    out = tmp_path / "run"
    if umask == 0o022:
        args = [*_echo_args(standin, echo_server), "--indices", "0", "--out", str(out)]
        proc = eval_process(args, umask=umask)
        _, err = proc.communicate(timeout=120)
    else:
        shards = [runs / f"shard-{i}" for i in range(SHARDS)]
        proc = eval_process([*map(str, shards), "--out", str(out)], command="merge", umask=umask)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    code, _, err = _orsgen(["view", out], umask)
    assert code == 0, err
    modes = _modes(out)
    expected = {"run.json", "adapter.json", "results.jsonl", "summary.json", "report.md"}
    assert expected | {"view.html", "pass_rate.png", "rewards.png"} <= set(modes), modes
    assert modes == dict.fromkeys(modes, 0o666 & ~umask), modes


def _damaged(shard: Path, copy: Path, damage: str) -> str:
    """A copy of ``shard`` whose results.jsonl has ``damage`` at its line 2; what a reader
    must say of it."""
    shutil.copytree(shard, copy)
    results = copy / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    row = json.loads(lines[1])
    if damage == "no task_index":
        del row["task_index"]
        lines[1] = json.dumps(row) + "\n"
        said = f"{results}: line 2 has no task_index"
    elif damage == "duplicate":
        lines[1] = lines[0]
        said = f"{results} holds (task {row['task_index']}, sample 0) twice"
    else:
        lines[1] = "[1, 2]\n"
        said = f"{results}: line 2 is not a JSON object"
    results.write_text("".join(lines))
    return said


@pytest.mark.parametrize("damage", ["duplicate", "malformed"])
def test_a_damaged_shard_is_one_line_and_leaves_nothing_in_out(
    damage: str, runs: Path, tmp_path: Path
) -> None:
    """Issue 45: a shard's row that is not whole, or there twice, stops the merge in one line
    naming the file (and the line), and ``--out`` is left as it was: absent."""
    said = _damaged(runs / "shard-2", tmp_path / "shard-2", damage)
    out = tmp_path / "merged"
    shards = [runs / "shard-0", runs / "shard-1", tmp_path / "shard-2"]
    _one_line(*_merge(*shards, "--out", out), said)
    assert not out.exists()


@pytest.mark.slow  # three orsgen processes; the fast tier stays under 4 min
def test_a_row_without_task_index_is_one_line_for_every_reader(
    runs: Path,
    standin: openai_standin.Standin,
    echo_server: ors_server.RunningServer,
    tmp_path: Path,
) -> None:
    """Issue 45: ``--resume``, ``orsgen sft`` and ``orsgen view`` name the file and the line
    of a row without task_index (exit 2), never a traceback."""
    run = tmp_path / "shard-0"
    said = _damaged(runs / "shard-0", run, "no task_index")
    (run / "summary.json").unlink()  # a run to resume
    args = [*_echo_args(standin, echo_server), "-n", str(N), "--shard", "0/3"]
    _one_line(*run_eval([*args, "--out", str(run), "--resume"]), said)
    for command in (["view", run], ["sft", run, "-o", tmp_path / "sft", "--allow-split", "test"]):
        code, printed, err = _orsgen(command, 0o022)
        assert code == 2 and err.count("\n") == 1 and said in err, err
        assert err.startswith(f"orsgen {command[0]}: error: "), err


@pytest.mark.parametrize("command", ["eval", "merge", "replay"])
def test_out_naming_a_file_is_one_line(command: str, runs: Path, tmp_path: Path) -> None:
    """Issue 45: ``--out`` naming an existing file is refused in one line (exit 2)."""
    out = tmp_path / "file"
    out.write_text("not a run\n")
    args = {
        "eval": ["eval", ECHO, "--endpoint", "http://127.0.0.1:1/v1", "--model", "m"],
        "merge": ["merge", *(runs / f"shard-{i}" for i in range(SHARDS))],
        "replay": ["replay", runs / "whole"],
    }[command]
    code, printed, err = _orsgen([*args, "--out", out], 0o022)
    assert (code, printed) == (2, ""), err
    assert (
        err
        == f"orsgen {args[0]}: error: --out {out} is a file, not a directory; name a run directory\n"
    )
    assert out.read_text() == "not a run\n"


@pytest.mark.slow  # two merges and a signal; the fast tier stays under 4 min
def test_a_merge_stopped_by_sigterm_says_to_run_it_again(runs: Path, tmp_path: Path) -> None:
    """Issue 45: SIGTERM stops a merge (here, waiting to read a shard's rows from a pipe) with
    a line that says to run the same merge again, which completes it (merge refuses
    --resume)."""
    shard = tmp_path / "shard-2"
    shutil.copytree(runs / "shard-2", shard)
    (shard / "results.jsonl").unlink()
    os.mkfifo(shard / "results.jsonl")  # no writer: the merge waits at its rows
    out = tmp_path / "merged"
    args = [str(runs / "shard-0"), str(runs / "shard-1"), str(shard), "--out", str(out)]
    proc = eval_process(args, command="merge")
    try:
        deadline = time.monotonic() + 60
        while not (out / "adapter.json").exists() and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()  # this test's own child, by its PID
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.endswith(
        f"orsgen merge: interrupted; {out} is unfinished: run the same merge again to complete "
        "it\n"
    ), err
    assert "--resume" not in err
    (shard / "results.jsonl").unlink()
    shutil.copy(runs / "shard-2" / "results.jsonl", shard / "results.jsonl")
    code, _, err = _merge(*args[:3], "--out", out)
    assert code == 0, err
    _same_run(out, runs / "whole")

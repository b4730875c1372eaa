"""What a user does after a crash, one finding of issue 39 each, through ``orsgen eval`` in
its own process (tests/fault_runs.py) against the echo server and the scripted stand-in:
two resumes of one run at once, SIGTERM's endpoint counts, ``--resume`` where no run was
ever written, and the rollout timeout as part of a run's identity. A merge run again after
a kill is tests/test_eval_shards.py's; tests/test_eval_faults.py injects these faults and
more at many points."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import openai_standin
import ors_server
from conftest import ROOT
from fault_runs import (
    N,
    SEED,
    Reference,
    Run,
    final_problems,
    finish,
    held_in_flight,
    holder_named,
    merge_args,
    one_line,
    partial_problems,
    read_json,
    requests_counted,
    row_lines,
    signal_when,
    wait_until,
)

ECHO = ROOT / "generated" / "echo"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai_standin.Standin]:
    logs = tmp_path_factory.mktemp("recovery-standin")
    server = openai_standin.start(logs, tool="echo", argument="text", quote=3, delay=0.05)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def evaluate(standin: openai_standin.Standin, echo_server: ors_server.RunningServer) -> "Evaluate":
    return Evaluate(standin, echo_server.url)


class Evaluate:
    """``orsgen eval generated/echo`` on the test split, n=3, against the stand-in, with an
    endpoint key of its own (``key``: what the stand-in counts and holds requests by)."""

    def __init__(self, standin: openai_standin.Standin, url: str) -> None:
        self.standin, self.url = standin, url

    def args(self, out: Path, key: str, *extra: str) -> list[str]:
        return [
            str(ECHO),
            "--endpoint",
            self.standin.endpoint,
            "--model",
            self.standin.model,
            "--endpoint-api-key",
            key,
            "--base-url",
            self.url,
            "--no-progress",
            "--split",
            "test",
            "-n",
            str(N),
            "--seed",
            str(SEED),
            "--out",
            str(out),
            *extra,
        ]

    def __call__(self, out: Path, key: str, *extra: str) -> Run:
        return Run(
            self.args(out, key, *extra), out.with_name(f"{out.name}-{key}-{time.monotonic_ns()}")
        )


@pytest.fixture(scope="module")
def reference(evaluate: Evaluate, tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """The run uninterrupted."""
    out = tmp_path_factory.mktemp("recovery") / "reference"
    code, _, said = finish(evaluate(out, "reference", "--concurrency", "2"))
    assert code == 0, said
    summary = read_json(out / "summary.json")
    assert 0 < summary["pass_at_k"]["1"] < 1  # a run whose rows differ
    return Reference(out)


def _merge(shards: list[Path], out: Path, *extra: str) -> tuple[int, str, str]:
    log = out.with_name(f"merge-{time.monotonic_ns()}")
    return finish(Run(merge_args(shards, out, *extra), log))


def _killed(reference: Reference, out: Path, rows: int) -> None:
    """``out``: the reference run as a SIGKILL after ``rows`` rows leaves it."""
    shutil.copytree(reference.out, out)
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(lines[:rows]))
    for name in ("summary.json", "report.md"):
        (out / name).unlink()
    config = read_json(out / "run.json")
    config.pop("endpoint_counts", None)  # written as the run ends
    (out / "run.json").write_text(json.dumps(config, indent=2))


def test_two_resumes_at_once_the_second_is_refused_naming_the_first(
    evaluate: Evaluate, standin: openai_standin.Standin, reference: Reference, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    _killed(reference, out, 4)
    key = "two-resumes"
    standin.hold(key)  # the first resume's rollouts wait at the endpoint
    try:
        first = evaluate(out, key, "--resume")
        assert wait_until(first, lambda: standin.waiting(key) >= 1) is None
        second = evaluate(out, key, "--resume")
        while second.process.poll() is None and standin.waiting(key) < 2:
            time.sleep(0.02)
        assert standin.waiting(key) < 2, "the second resume ran rollouts beside the first"
        code, printed, said = finish(second, 60)
        refused = one_line(code, printed, said)
        assert refused is None, refused
        assert holder_named(said, first.pid), (first.pid, socket.gethostname(), said)
    finally:
        standin.release(key)
    code, _, said = finish(first)
    assert code == 0, said
    assert final_problems(out, reference) == []


def test_sigterm_ends_the_run_within_seconds_and_keeps_its_endpoint_counts(
    evaluate: Evaluate, standin: openai_standin.Standin, reference: Reference, tmp_path: Path
) -> None:
    """Preemption (SLURM, Kubernetes) sends SIGTERM: with two requests in flight, held at
    the endpoint, the run ends, abandoning them, and run.json counts every request the
    endpoint received; a resume adds its own."""
    out, key = tmp_path / "run", "sigterm"
    run = evaluate(out, key, "--concurrency", "2")
    try:
        in_flight = held_in_flight(standin, key, lambda: row_lines(out) >= 3, 2)
        assert signal_when(run, in_flight, signal.SIGTERM, limit=240) is None
    finally:
        standin.release(key)
    assert requests_counted(out) == standin.received(key)
    assert partial_problems(out, reference) == []  # no row for an abandoned rollout
    code, _, said = finish(evaluate(out, key, "--resume", "--concurrency", "2"))
    assert code == 0, said
    assert requests_counted(out) == standin.received(key)
    assert final_problems(out, reference) == []


def test_resume_where_no_run_was_written_starts_it(
    evaluate: Evaluate, reference: Reference, orsgen_subprocess: Any, tmp_path: Path
) -> None:
    """A requeued job runs the same command: its first run died before writing run.json.
    ``--help`` says so."""
    out = tmp_path / "run"
    out.mkdir()
    code, _, said = finish(evaluate(out, "requeued", "--resume", "--concurrency", "2"))
    assert code == 0, said
    assert final_problems(out, reference) == []
    shown = orsgen_subprocess(["eval", "--help"]).stdout
    resume = " ".join(shown[shown.index("\n  --resume") + 1 :].split("\n  -")[0].split())
    assert "start" in resume, resume


def test_the_rollout_timeout_is_part_of_the_runs_identity(
    evaluate: Evaluate, tmp_path: Path
) -> None:
    shards = [tmp_path / "shard-0", tmp_path / "shard-1"]
    runs = [
        evaluate(shards[0], "timeout", "--shard", "0/2", "--rollout-timeout", "60"),
        evaluate(shards[1], "timeout", "--shard", "1/2", "--rollout-timeout", "5"),
    ]
    for run in runs:
        code, _, said = finish(run)
        assert code == 0, said
    assert [read_json(s / "run.json").get("rollout_timeout") for s in shards] == [60, 5]
    resumed = evaluate(shards[0], "timeout", "--shard", "0/2", "--rollout-timeout", "5", "--resume")
    refusals = [
        one_line(*finish(resumed), "--rollout-timeout"),
        one_line(*_merge(shards, tmp_path / "merged"), "--rollout-timeout"),
    ]
    assert refusals == [None, None], refusals

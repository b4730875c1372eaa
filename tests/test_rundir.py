"""The run directory's files have one owner (orsgen/rundir.py): one rule for a torn
last line, whoever reads the run (``orsgen view``, ``orsgen sft``, a resumed ``orsgen eval``),
and no other module spells the files' names."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import view_runs
from conftest import ROOT, CliRun

NAMES = {"run.json", "adapter.json", "results.jsonl", "summary.json"}


def test_no_other_module_spells_the_run_files_names() -> None:
    spelt = sorted(
        f"{path.relative_to(ROOT)}:{node.lineno} {node.value}"
        for path in (ROOT / "orsgen").rglob("*.py")
        if path.name != "rundir.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and node.value in NAMES
    )
    assert spelt == []


def _run_with_a_torn_last_row(directory: Path) -> Path:
    """2 tasks x 2 samples of whole rows, then a whole JSON row of task 9 without its newline
    (the writer was killed before it): a row no reader may take."""
    run = view_runs.eval_run(directory, 2, 2)
    tools = [{"type": "function", "function": {"name": "submit", "parameters": {}}}]
    (run / "adapter.json").write_text(json.dumps({"train_split": "test", "tools": tools}))
    torn = view_runs.eval_row(9, 0)
    torn["verdict"], torn["reward"], torn["reason"] = "scored", 1.0, None
    with (run / "results.jsonl").open("a") as fh:
        fh.write(json.dumps(torn))
    return run


def test_a_torn_last_row_is_left_out_by_every_reader(
    tmp_path: Path, orsgen_subprocess: Callable[..., CliRun]
) -> None:
    run = _run_with_a_torn_last_row(tmp_path / "run")
    page = tmp_path / "page.html"
    viewed = orsgen_subprocess(["view", str(run), "-o", str(page)])
    assert viewed.code == 0, viewed.stderr
    data = re.search(
        r'<script id="run-data" type="application/json">(.*?)</script>', page.read_text()
    )
    assert data is not None
    records = json.loads(data.group(1))["records"]
    assert sorted((r["task"], r["sample"]) for r in records) == [(0, 0), (0, 1), (1, 0), (1, 1)]

    out = tmp_path / "sft"
    exported = orsgen_subprocess(["sft", str(run), "-o", str(out), "--allow-split", "test"])
    assert exported.code == 0, exported.stderr
    import datasets

    assert 9 not in datasets.load_from_disk(str(out))["task_index"]
    # Neither changed the file: only a resumed orsgen eval cuts the torn line off.
    assert not (run / "results.jsonl").read_bytes().endswith(b"\n")


def test_a_broken_whole_line_names_the_file_and_line(
    tmp_path: Path, orsgen_subprocess: Callable[..., CliRun]
) -> None:
    run = view_runs.eval_run(tmp_path / "run", 1, 2)
    results = run / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text(lines[0] + "[1, 2]\n" + lines[1])
    viewed = orsgen_subprocess(["view", str(run)])
    assert viewed.code == 2 and f"{results}: line 2 is not a JSON object" in viewed.stderr


def test_a_pair_twice_is_refused_by_every_reader(
    tmp_path: Path, orsgen_subprocess: Callable[..., CliRun]
) -> None:
    """Duplicate detection of orsgen.rundir: a (task, sample) pair written twice (two
    processes at once, before the lock) is named, never counted twice."""
    run = _run_with_a_torn_last_row(tmp_path / "run")
    results = run / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join(lines[:4]) + lines[1])
    said = f"{results} holds (task 0, sample 1) twice"
    for command in (
        ["view", str(run)],
        ["sft", str(run), "-o", str(tmp_path / "sft"), "--allow-split", "test"],
    ):
        refused = orsgen_subprocess(command)
        assert refused.code == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert said in refused.stderr, refused.stderr


@pytest.mark.slow  # an orsgen eval under strace, and a request failing for 3 s
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace to see the fsyncs")
def test_a_row_is_fsynced_within_a_second_though_no_row_follows(
    echo_server: Any, tmp_path: Path
) -> None:
    """Issue 45: the docs promise a lost machine loses at most a second of rows. One rollout's
    row is written, the other's request is failing slowly (504s, rests of 1 s and 2 s): the
    first row is fsynced before the second is written, not with it (strace sees the order)."""
    import openai_standin

    model = openai_standin.start(tmp_path, tool="echo", argument="text", poison="'grape'")
    try:
        out, trace = tmp_path / "run", tmp_path / "strace.txt"
        args = [str(ROOT / "generated" / "echo"), "--endpoint", model.endpoint, "--model"]
        args += [model.model, "--base-url", echo_server.url, "--split", "test", "--indices"]
        args += ["0,1", "--concurrency", "2", "--request-attempts", "3", "--no-progress"]
        strace = ["strace", "-f", "-ttt", "-y", "-e", "trace=write,fsync", "-e", "signal=none"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
        done = subprocess.run(
            [*strace, "-o", str(trace), sys.executable, "-m", "orsgen", "eval", *args]
            + ["--out", str(out)],
            cwd=ROOT,
            env={**env, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        model.stop()
    assert done.returncode == 0, done.stderr
    verdicts = sorted(r["verdict"] for r in map(json.loads, (out / "results.jsonl").open()))
    assert verdicts == ["failed", "scored"]
    results = f"{out / 'results.jsonl'}>"
    timed = [  # (seconds, call) of each write or fsync of results.jsonl, as it starts: a call
        # that another thread's call interrupts is cut in two, "<unfinished ...>" and "resumed"
        (float(line.split()[1]), line.split()[2].split("(")[0])
        for line in trace.read_text().splitlines()
        if results in line
    ]
    calls = [call for _, call in timed]
    assert calls == ["write", "fsync", "write", "fsync"], timed

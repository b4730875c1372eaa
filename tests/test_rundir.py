"""The run directory's files have one owner (orsgen/rundir.py): one rule for a torn
last line, whoever reads the run (``orsgen view``, ``orsgen sft``, a resumed ``orsgen eval``),
and no other module spells the files' names."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from pathlib import Path

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
    exported = orsgen_subprocess(["sft", str(run), "-o", str(out)])
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
    for command in (["view", str(run)], ["sft", str(run), "-o", str(tmp_path / "sft")]):
        refused = orsgen_subprocess(command)
        assert refused.code == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert said in refused.stderr, refused.stderr

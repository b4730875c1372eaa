"""The per-task table from the trajectory log (``TaskTableCallback(trajectories=...)``):
the reader takes only whole lines, from every process's file for the path, each once; and
with both sources on (GRPOTrainer's ``outcome_reward`` and the adapters' trajectory log) a
rollout counts once."""

from __future__ import annotations

import csv
import json
import logging
import multiprocessing as mp
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from transformers import TrainerControl, TrainerState, TrainingArguments

from conftest import ROOT
from generated.echo import EchoEnv
from generated.echo.rewards import outcome_reward
from orsgen.runtime.choosing.curriculum import PassRateCurriculum
from orsgen.runtime.choosing.prior import PriorError
from orsgen.runtime.task_callback import TaskTableCallback
from orsgen.runtime.trajectories import task_table
from orsgen.runtime.trajectories.reader import TrajectoryFiles, fold, task_outcome
from orsgen.runtime.trajectories.task_table import TaskTable
from orsgen.runtime.trajectories.writer import JsonlFile

pytestmark = pytest.mark.timeout(120)


def _line(task: int, reward: float | None, kind: str = "scored") -> dict[str, Any]:
    return {"split": "train", "task_index": task, "outcome": kind, "reward": reward}


def _text(line: dict[str, Any]) -> bytes:
    return (json.dumps(line) + "\n").encode()


def test_a_half_written_line_is_read_once_it_is_whole(tmp_path: Path) -> None:
    path = tmp_path / "traj.jsonl"
    first, second = _text(_line(0, 1.0)), _text(_line(1, 0.0))
    path.write_bytes(first + second[:7])  # the writer is mid-line
    reader = TrajectoryFiles(path)
    assert reader.new_lines() == [_line(0, 1.0)]
    assert reader.new_lines() == []
    with path.open("ab") as handle:
        handle.write(second[7:])
    assert reader.new_lines() == [_line(1, 0.0)]
    assert reader.new_lines() == []


def test_every_process_file_of_the_path_and_no_other(tmp_path: Path) -> None:
    names = ["traj.jsonl", "traj.rank1.jsonl", "traj.pid4242.jsonl"]
    for i, name in enumerate(names):
        (tmp_path / name).write_bytes(_text(_line(i, 1.0)))
    for other in ["traj.csv", "other.jsonl", "traj.rankx.jsonl", "traj.rank1.jsonl.tmp"]:
        (tmp_path / other).write_bytes(_text(_line(9, 1.0)))
    reader = TrajectoryFiles(tmp_path / "traj.jsonl")
    assert sorted(p.name for p in reader.files()) == sorted(names)
    assert sorted(line["task_index"] for line in reader.new_lines()) == [0, 1, 2]


def test_skip_existing_reads_only_what_comes_after(tmp_path: Path) -> None:
    path = tmp_path / "traj.jsonl"
    late = _text(_line(2, 1.0))
    path.write_bytes(_text(_line(0, 1.0)) + late[:5])  # an earlier run's line, and one mid-write
    reader = TrajectoryFiles(path)
    reader.skip_existing()
    with path.open("ab") as handle:
        handle.write(late[5:] + _text(_line(3, 0.0)))
    assert [line["task_index"] for line in reader.new_lines()] == [2, 3]


def test_training_skips_a_broken_line_with_one_warning_and_view_names_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 45: training never stops on its own log. The task table's reader (during
    training) warns once and skips a whole line that is not a JSON object; ``orsgen view``
    (offline) names the file and the line, exit 2."""
    path = tmp_path / "traj.jsonl"
    path.write_bytes(_text(_line(0, 1.0)) + b"[1, 2]\n" + _text(_line(1, 0.0)))
    callback = TaskTableCallback(trajectories=path)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), report_to=[])
    state, control = TrainerState(), TrainerControl()
    caplog.set_level(logging.WARNING, "orsgen.runtime")
    callback.on_train_begin(args, state, control)  # the lines already there are an earlier run's
    with path.open("ab") as handle:
        handle.write(_text(_line(2, 1.0)) + b"{not json\n" + _text(_line(3, 0.0)))
    callback.on_log(args, state, control)
    with path.open("ab") as handle:
        handle.write(b"7\n" + _text(_line(4, 1.0)))
    callback.on_log(args, state, control)
    table = tmp_path / "out" / "ors_tasks.csv"
    with table.open() as fh:
        assert [int(r["task_index"]) for r in csv.DictReader(fh)] == [2, 3, 4]
    umask = os.umask(0o022)
    os.umask(umask)
    assert table.stat().st_mode & 0o777 == 0o666 & ~umask  # readable as any new file
    [warning] = [r.getMessage() for r in caplog.records]
    assert warning.startswith(f"{path}: line at byte ") and "training goes on" in warning
    viewed = subprocess.run(
        [sys.executable, "-m", "orsgen", "view", str(path), "-o", str(tmp_path / "v.html")],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert viewed.returncode == 2, viewed.stderr
    assert (
        viewed.stderr
        == f"orsgen view: error: {path}: line 2 is not a JSON object; move the file away\n"
    )


def test_a_replaced_file_is_read_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "traj.jsonl"
    reader = TrajectoryFiles(path)
    path.write_bytes(_text(_line(0, 1.0)) + _text(_line(1, 1.0)))
    assert len(reader.new_lines()) == 2
    path.write_bytes(_text(_line(5, 0.0)))  # shorter than what was read: a new file
    assert reader.new_lines() == [_line(5, 0.0)]


def test_a_killed_writers_torn_line_is_cut_before_the_next_appends(tmp_path: Path) -> None:
    """A restarted process appending to its predecessor's file (the same rank's) cuts the
    torn last line first: no malformed line is ever written."""
    path = tmp_path / "traj.jsonl"
    path.write_bytes(_text(_line(0, 1.0)) + b'{"split": "tr')  # killed mid-line
    JsonlFile(str(path)).write(_line(1, 0.0))
    assert TrajectoryFiles(path).new_lines() == [_line(0, 1.0), _line(1, 0.0)]


def test_task_outcome_takes_only_well_formed_lines() -> None:
    found = task_outcome({**_line(3, 0.5), "why_unscored": None, "finished": True})
    assert found is not None and found[0] == ("train", 3)
    assert (found[1].reward, found[1].kind, found[1].finished) == (0.5, "scored", True)
    assert task_outcome({**_line(3, None, "failed"), "task_index": None}) is not None
    for bad in [{"task_index": True}, {"outcome": "won"}, {"reward": "1"}, {"split": 0}]:
        assert task_outcome({**_line(3, 1.0), **bad}) is None, bad
    table = TaskTable()
    assert fold(table, [_line(1, 1.0), _line(1, 0.0), {"x": 1}], 4) == 1
    assert [(r["task_index"], r["rollouts"], r["pass_rate"]) for r in table.rows()] == [(1, 2, 0.5)]


def _write_lines(path: str, writer: int, count: int) -> None:
    sink = JsonlFile(path)  # a forked child writes traj.pid<pid>.jsonl
    for seq in range(count):
        sink.write({**_line(writer, 1.0), "seq": seq, "pad": "x" * 3000})


def test_several_processes_writing_while_the_reader_reads(tmp_path: Path) -> None:
    path = str(tmp_path / "traj.jsonl")
    reader = TrajectoryFiles(path)
    writers = [
        mp.get_context("fork").Process(target=_write_lines, args=(path, w, 300)) for w in range(3)
    ]
    seen: list[tuple[int, int]] = []
    for process in writers:
        process.start()
    try:
        while any(p.is_alive() for p in writers):
            seen += [(line["task_index"], line["seq"]) for line in reader.new_lines()]
            for process in writers:
                process.join(timeout=0.01)
    finally:
        for process in writers:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()  # this test's own child, by its PID
    seen += [(line["task_index"], line["seq"]) for line in reader.new_lines()]
    assert all(p.exitcode == 0 for p in writers)
    assert len(reader.files()) == 3
    assert sorted(seen) == [(w, s) for w in range(3) for s in range(300)]


@pytest.mark.usefixtures("fresh_runtime")
def test_with_both_sources_a_rollout_counts_once(echo_server, orsgen_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """GRPOTrainer's in-process table and the adapters' trajectory log both see the batch;
    the callback with ``trajectories=`` counts each rollout once, like the in-process one.
    The file (read through ``open_run``) seeds a curriculum with the table's pass rates, and
    ``orsgen view`` shows each rollout's verdict, reward, calls and stop."""
    task_table.table().clear()
    path = tmp_path / "traj.jsonl"
    args = TrainingArguments(output_dir=str(tmp_path / "out"), report_to=[])
    state, control = TrainerState(), TrainerControl()
    from_lines, in_process = TaskTableCallback(trajectories=path), TaskTableCallback("own.csv")
    from_lines.on_train_begin(args, state, control)
    envs = [EchoEnv(base_url=echo_server.url, prefetch=False, trajectories=path) for _ in range(3)]
    try:
        for env, (task, word) in zip(envs, [(0, "apple"), (1, "cherry"), (1, "banana")]):
            env.reset(task_index=task)
            env.echo(text=word)
        state.global_step = 0
        outcome_reward(envs, [[]] * 3, trainer_state=state)
    finally:
        for env in envs:
            env.close()
    state.global_step = 1
    for callback in (from_lines, in_process):
        callback.on_log(args, state, control)
        callback.on_train_end(args, state, control)

    def rows(name: str) -> list[dict[str, str]]:
        with (tmp_path / "out" / name).open(encoding="utf-8") as handle:
            return list(csv.DictReader(handle))

    assert rows("ors_tasks.csv") == rows("own.csv")
    assert [(r["task_index"], r["rollouts"], r["pass_rate"]) for r in rows("ors_tasks.csv")] == [
        ("0", "1", "1.0"),
        ("1", "2", "0.5"),
    ]
    prior = PassRateCurriculum(prior=path).prior
    assert prior is not None and prior.rates == {0: 1.0, 1: 0.5}
    EchoEnv(base_url="http://127.0.0.1:9", curriculum=PassRateCurriculum(prior=path))  # its split
    with pytest.raises(PriorError, match="measured with split='train'.* split='test'"):
        EchoEnv(
            base_url="http://127.0.0.1:9", split="test", curriculum=PassRateCurriculum(prior=path)
        )
    page = tmp_path / "v.html"
    assert orsgen_cli(["view", str(path), "-o", str(page)]).code == 0
    data = page.read_text().split('type="application/json">')[1].split("</script>")[0]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [
        (r["task"], r["verdict"], r["reward"], r["stop"], r["counts"]["calls"])
        for r in json.loads(data)["records"]
    ] == [(r["task_index"], r["outcome"], r["reward"], r["stop"], 1) for r in lines]

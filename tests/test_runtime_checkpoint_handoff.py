"""CurriculumCheckpoint's hand-off to AsyncGRPO's rollout worker, without a trainer run
(tests/test_e2e_async_checkpoint.py runs the real one): the worker is a child spawned as
``AsyncRolloutWorker.start()`` spawns it (multiprocessing's spawn context, the trainer's
environment inherited), the callback is driven with a real ``AsyncGRPOConfig``.

- A save before the worker wrote anything says so and writes a file with no stream, which
  resumes (the task choice afresh, as the resume says), never an empty curriculum.
- The worker stages the checkpoint's state before its first stream: the stream is made
  where the saved one was, and the worker writes on from there.
- A new run's train begin removes an earlier run's worker file; train end takes the
  hand-off out of the environment.
- The uniform passes resume where the worker was, past the first pass.
"""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import handoff_child
from uniform_passes import group_task
from orsgen.runtime.choosing.checkpoint import CurriculumCheckpoint, path
from orsgen.runtime.choosing import checkpoint

pytest.importorskip("trl")

pytestmark = pytest.mark.timeout(300)


def _args(out: Path) -> Any:
    from trl.experimental.async_grpo import AsyncGRPOConfig

    return AsyncGRPOConfig(output_dir=str(out), use_cpu=True, bf16=False, report_to="none")


def _spawn(resets: int, curriculum: bool = True) -> tuple[dict[str, Any], list[int]]:
    """The worker's stream state when made, and the tasks it chose."""
    ctx = mp.get_context("spawn")  # as AsyncRolloutWorker: a fresh interpreter, our environ
    answer = ctx.Queue()
    child = ctx.Process(target=handoff_child.choose, args=(resets, answer, curriculum), daemon=True)
    child.start()
    try:
        made, chosen = answer.get(timeout=120), answer.get(timeout=120)
        child.join(timeout=120)
        assert child.exitcode == 0, child.exitcode
        return dict(made), list(chosen)
    finally:
        if child.is_alive():  # this test's own child, by its PID
            child.kill()
            child.join(timeout=10)


def test_the_worker_writes_its_state_and_resumes_from_the_checkpoint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(checkpoint.ENV, raising=False)
    out = tmp_path / "out"
    args = _args(out)
    latest = out / checkpoint.DIRECTORY / checkpoint.LATEST
    latest.parent.mkdir(parents=True)
    latest.write_text("an earlier run's state")
    callback = CurriculumCheckpoint()

    callback.on_train_begin(args, SimpleNamespace(global_step=0), None)
    assert not latest.exists()  # never copied into this run's checkpoints
    named = json.loads(os.environ[checkpoint.ENV])
    assert (named["directory"], named["resume"]) == (str(latest.parent), None)

    with caplog.at_level(logging.WARNING, logger="orsgen.runtime"):
        callback.on_save(args, SimpleNamespace(global_step=1), None)
    assert "has written no task-choice state yet" in caplog.text
    assert json.loads(path(out, 1).read_text()) == {"format": 2, "streams": []}

    made, _ = _spawn(resets=6)  # the worker: 3 groups of 2, each outcome observed
    assert made["given"] == 0
    callback.on_save(args, SimpleNamespace(global_step=2), None)
    saved = json.loads(path(out, 2).read_text())
    assert saved == json.loads(latest.read_text())
    (stream,) = saved["streams"]
    assert stream["stream"] == handoff_child.KEY.to_json()
    assert stream["state"]["given"] == 6
    assert stream["state"]["curriculum"]["planned"] == 3
    callback.on_train_end(args, SimpleNamespace(global_step=2), None)
    assert checkpoint.ENV not in os.environ

    # Resumed from checkpoint-2: the new worker's stream is made where the saved one was.
    resumed = CurriculumCheckpoint()
    resumed.on_train_begin(args, SimpleNamespace(global_step=2), None)
    assert json.loads(os.environ[checkpoint.ENV])["resume"] == str(path(out, 2))
    assert not latest.exists()
    made, _ = _spawn(resets=2)
    assert made == stream["state"]
    state = json.loads(latest.read_text())["streams"][0]["state"]
    assert state["given"] == 8 and state["curriculum"]["planned"] == 4
    resumed.on_train_end(args, SimpleNamespace(global_step=2), None)

    # A resume from the checkpoint saved before the worker wrote says it starts afresh.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="orsgen.runtime"):
        CurriculumCheckpoint().on_train_begin(args, SimpleNamespace(global_step=1), None)
    assert "holds no task-choice stream, so the task choice starts afresh" in caplog.text
    monkeypatch.delenv(checkpoint.ENV, raising=False)


def test_the_uniform_passes_resume_where_the_worker_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seeded uniform passes go on from the worker's saved position, past the first
    pass, instead of starting pass 0 again."""
    monkeypatch.delenv(checkpoint.ENV, raising=False)
    out = tmp_path / "out"
    args = _args(out)
    first = CurriculumCheckpoint()
    first.on_train_begin(args, SimpleNamespace(global_step=0), None)
    _, before = _spawn(resets=26, curriculum=False)  # a pass of 10 groups of 2, and 3 more
    first.on_save(args, SimpleNamespace(global_step=1), None)
    first.on_train_end(args, SimpleNamespace(global_step=1), None)
    resumed = CurriculumCheckpoint()
    resumed.on_train_begin(args, SimpleNamespace(global_step=1), None)
    made, after = _spawn(resets=8, curriculum=False)
    resumed.on_train_end(args, SimpleNamespace(global_step=1), None)
    assert made["given"] == 26
    expected = [group_task(handoff_child.TASKS, 0, r // 2) for r in range(34)]
    assert before + after == expected


def test_the_trainer_process_is_never_the_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a child of the trainer writes: the trainer's own streams (none under AsyncGRPO)
    would otherwise race the worker for the file."""
    named = checkpoint.Handoff(tmp_path, None, os.getpid())
    monkeypatch.setenv(checkpoint.ENV, named.to_env())
    checkpoint.join()
    checkpoint.flush()
    assert not named.latest.exists()


def test_an_idle_worker_serialises_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's writer skips the periods with no choice or outcome (a catalog-sized
    state costs O(tasks) to serialise), and still writes a new choice on its own."""
    monkeypatch.delenv(checkpoint.ENV, raising=False)
    args = _args(tmp_path / "out")
    callback = CurriculumCheckpoint()
    callback.on_train_begin(args, SimpleNamespace(global_step=0), None)
    ctx = mp.get_context("spawn")
    answer = ctx.Queue()
    child = ctx.Process(target=handoff_child.idle, args=(answer, 3.0), daemon=True)
    child.start()
    try:
        idle_writes, wrote_new = answer.get(timeout=120), answer.get(timeout=120)
        child.join(timeout=120)
        assert child.exitcode == 0, child.exitcode
    finally:
        callback.on_train_end(args, SimpleNamespace(global_step=1), None)
        if child.is_alive():  # this test's own child, by its PID
            child.kill()
            child.join(timeout=10)
    assert idle_writes == 0  # three idle periods, no serialisation
    assert wrote_new is True

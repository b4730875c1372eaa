"""How ``evaluate``'s workers run the rollouts (orsgen/eval/workers.py): each worker opens its
next rollout's session while the current one runs, except under a rollout deadline or a
session cap, and the objects made before the rollouts stay out of the cyclic collector's way
only during them. A real ORS server (tests/envs/chance_env.py) and the scripted OpenAI-compatible stand-in
(tests/openai_standin.py) on 127.0.0.1; nothing is mocked."""

from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import Any

import pytest

from conftest import import_generated

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _run(chance_dir: Path, url: str, standin: Any, wait: float, **options: Any) -> dict[str, Any]:
    """Evaluate tasks 0 and 1 at concurrency 1 with an adapter whose rollout of task 0, once
    its session is open, waits up to ``wait`` seconds for a reset of task 1 to begin: whether
    it began, the collector's freeze count during the resets and after the run, and the
    rows."""
    from orsgen.eval import EvalConfig, evaluate

    pkg = import_generated(chance_dir)
    began = threading.Event()
    seen: dict[str, Any] = {"met": [], "frozen": []}

    class Meeting(pkg.ChanceEnv):  # type: ignore[misc, name-defined]
        task: int | None = None

        def reset(self, *args: Any, **kwargs: Any) -> Any:
            seen["frozen"].append(gc.get_freeze_count())
            self.task = kwargs.get("task_index")
            if self.task == 1:
                began.set()
            return super().reset(*args, **kwargs)

        @property
        def finished(self) -> bool:  # read by the conversation before each turn
            if self.task == 0 and not seen["met"]:
                seen["met"].append(began.wait(wait))
            return bool(super().finished)

    config = EvalConfig(
        model=standin.model, endpoint=standin.endpoint, split="test", task_indices=(0, 1)
    )
    options.setdefault("adapter", {"base_url": url})
    result = evaluate(Meeting, config, progress=False, **options)
    seen["rows"] = sorted(r.task_index for r in result.records)
    seen["after"] = gc.get_freeze_count()
    return seen


def test_the_next_rollouts_session_opens_while_one_runs(
    chance_dir: Path, chance_server: Any, standin: Any
) -> None:
    """One worker: task 1's session opens while task 0's rollout is under way (task 0's
    rollout would otherwise wait in vain: one rollout at a time)."""
    seen = _run(chance_dir, chance_server.url, standin, wait=120)
    assert seen["met"] == [True] and seen["rows"] == [0, 1]
    assert all(count > 0 for count in seen["frozen"]) and seen["after"] == 0


def test_no_session_opens_ahead_under_a_rollout_deadline(
    chance_dir: Path, chance_server: Any, standin: Any
) -> None:
    """A rollout deadline counts from the session's open: a session opened ahead would spend
    it waiting, so task 1's opens only once task 0's rollout is over."""
    adapter = {"base_url": chance_server.url, "rollout_timeout": 300}
    seen = _run(chance_dir, chance_server.url, standin, wait=2, adapter=adapter)
    assert seen["met"] == [False] and seen["rows"] == [0, 1]


def test_no_session_opens_ahead_under_a_session_cap(
    chance_dir: Path, chance_server: Any, standin: Any
) -> None:
    """Under ``max_sessions`` a session opened ahead would hold a place (or wait for one):
    task 1's opens only once task 0's rollout is over."""
    adapter = {"base_url": chance_server.url, "max_sessions": 4}
    seen = _run(chance_dir, chance_server.url, standin, wait=2, adapter=adapter)
    assert seen["met"] == [False] and seen["rows"] == [0, 1]

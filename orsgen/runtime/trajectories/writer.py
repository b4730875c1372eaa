"""Opt-in trajectory records: one line per rollout, to a :class:`TrajectorySink`.

``trajectories=`` takes a path (:class:`JsonlFile`) or any object with ``write(line)``; a
sink handed to ``functools.partial`` must pickle (AsyncGRPO spawns its rollout worker).
A line (:func:`line`) holds no secret, no ``env_overrides`` and no task-spec content: the
adapter never hands them to the episode.

:class:`JsonlFile` writes one file per process (the path, ``x.rank<r>.jsonl`` or
``x.pid<pid>.jsonl``): no two processes append to one file.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from orsgen.recorded_package import package_path, recorded
from orsgen.runtime.records import trainer_facts
from orsgen.runtime.records.protocol import Rollout
from orsgen.runtime.transport.identity import identity
from orsgen.runtime.transport.process import at_shutdown, current, forked
from orsgen.rundir import cut_torn

logger = logging.getLogger("orsgen.runtime")


class TrajectorySink(Protocol):
    """Where settled rollouts' lines go. ``write`` may raise ``OSError``: it is logged, and
    the run goes on."""

    def write(self, line: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class JsonlFile:
    """One JSON line per rollout, appended to this process's file (:func:`process_path`)."""

    path: str

    def write(self, line: dict[str, Any]) -> None:
        writers().write(self.path, line)

    def __str__(self) -> str:
        return self.path


def sink_of(value: str | os.PathLike[str] | TrajectorySink | None) -> TrajectorySink | None:
    """The sink ``trajectories=`` names: a path is a :class:`JsonlFile`."""
    if value is None:
        return None
    if isinstance(value, (str, os.PathLike)):
        return JsonlFile(os.fspath(value))
    if not callable(getattr(value, "write", None)):
        raise TypeError(f"trajectories must be a path or a sink with write(line), got {value!r}")
    return value


def line(rollout: Rollout, directory: Path | None = None) -> dict[str, Any]:
    """The trajectory line of a rollout: what ``orsgen replay`` replays (each call's arguments
    whole, its result by hash) and the generated package, relative to ``directory`` (the
    trajectory file's; absolute for none). No secret, override or task-spec content."""
    episode, outcome = rollout.episode, rollout.outcome()
    return {
        "env": rollout.env,
        **recorded(package_path(rollout.owner), directory),
        "split": rollout.split,
        "task_index": episode.task_index,
        "task_spec": episode.task_spec,
        "task_chosen": episode.chosen,
        "outcome": outcome.kind,
        "why_unscored": outcome.reason,
        "reward": outcome.reward,
        "pass_threshold": rollout.pass_threshold,
        "unfinished_reward": rollout.unfinished_reward,
        "stop": outcome.stop,
        "finished": rollout.finished,
        "reset_s": round(episode.reset_seconds, 4),
        "duration_s": round(time.time() - episode.started_at, 4),
        "started_at": round(episode.started_at, 3),
        "calls": [c.record() for c in episode.calls],
        "step": trainer_facts.current_step(),  # the trainer step of the last scored batch
    }


def deliver(sink: TrajectorySink, rollout: Rollout) -> None:
    """Write ``rollout``'s line to ``sink``; a full disk must not end the run (said once)."""
    directory = Path(sink.path).parent if isinstance(sink, JsonlFile) else None
    try:
        sink.write(line(rollout, directory))
    except OSError as exc:
        logger.warning("could not write a trajectory line to %s: %s", sink, exc)


def process_path(path: str | os.PathLike[str], rank: int, world: int, forked: bool) -> Path:
    """The file this process writes for the configured ``path``."""
    base = Path(path)
    if world > 1:
        return base.with_name(f"{base.stem}.rank{rank}{base.suffix}")
    if forked:
        return base.with_name(f"{base.stem}.pid{os.getpid()}{base.suffix}")
    return base


def process_paths(path: str | os.PathLike[str]) -> list[Path]:
    """Every process's file for ``path`` (as :func:`process_path` names them), sorted by name."""
    base = Path(path)
    name = re.compile(rf"{re.escape(base.stem)}(\.rank\d+|\.pid\d+)?{re.escape(base.suffix)}")
    if not base.parent.is_dir():
        return []
    return sorted(p for p in base.parent.iterdir() if name.fullmatch(p.name) and p.is_file())


SHUTDOWN_ORDER = 50  # independent of sessions and clients


class Writers:
    """This process's open trajectory files, by path (a forked child opens its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: dict[str, Any] = {}

    def write(self, path: str, line: dict[str, Any]) -> None:
        text = json.dumps(line, sort_keys=True, default=repr) + "\n"
        with self._lock:
            handle = self._files.get(path)
            if handle is None:
                me = identity()
                target = process_path(path, me.rank, me.world_size, forked())
                target.parent.mkdir(parents=True, exist_ok=True)
                cut_torn(target)  # a killed process's last line: no line is ever malformed
                handle = self._files[path] = target.open("a", encoding="utf-8")
            handle.write(text)
            handle.flush()

    def close(self) -> None:
        with self._lock:
            for handle in self._files.values():
                handle.close()
            self._files.clear()


def writers() -> Writers:
    return current().part(Writers)


at_shutdown(SHUTDOWN_ORDER, lambda process: process.part(Writers).close())

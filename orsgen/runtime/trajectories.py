"""Opt-in trajectory records: one JSON line per rollout (``trajectories="runs/x.jsonl"``).

Each line is :func:`orsgen.runtime.episode.record`: the task, each call's tool, arguments,
truncated output, reward and timing, the outcome and why the rollout is unscored. It
holds no secret, no ``env_overrides`` and no task-spec content: the adapter never hands
them to the episode.

One file per process. The process that trains alone (or rank 0 of one) writes the path
as given; rank ``r`` of a distributed run writes ``x.rank<r>.jsonl``; a forked child
writes ``x.pid<pid>.jsonl``, so no two processes append to one file.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from orsgen.runtime.process import Process, at_shutdown, current
from orsgen.runtime.tasks import world_size


def process_path(path: str | os.PathLike[str], rank: int, world: int, forked: bool) -> Path:
    """The file this process writes for the configured ``path``."""
    base = Path(path)
    if world > 1:
        return base.with_name(f"{base.stem}.rank{rank}{base.suffix}")
    if forked:
        return base.with_name(f"{base.stem}.pid{os.getpid()}{base.suffix}")
    return base


def _rank() -> int:
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


# The process that imported this module first; a forked child inherits it, a spawned
# child (AsyncGRPO's rollout worker) imports it anew.
_FIRST_PID = os.getpid()
SHUTDOWN_ORDER = 50  # independent of sessions and clients


class Writers:
    """This process's open trajectory files, by configured path (a
    :meth:`~orsgen.runtime.process.Process.part`: a forked child opens its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: dict[str, Any] = {}

    def write(self, path: str, line: dict[str, Any]) -> None:
        text = json.dumps(line, sort_keys=True, default=repr) + "\n"
        with self._lock:
            handle = self._files.get(path)
            if handle is None:
                forked = os.getpid() != _FIRST_PID
                target = process_path(path, _rank(), world_size(), forked)
                target.parent.mkdir(parents=True, exist_ok=True)
                handle = self._files[path] = target.open("a", encoding="utf-8")
            handle.write(text)
            handle.flush()

    def close(self) -> None:
        with self._lock:
            for handle in self._files.values():
                handle.close()
            self._files.clear()


def writers() -> Writers:
    """This process's trajectory files."""
    return current().part(Writers)


def _close_at_exit(process: Process) -> None:
    process.part(Writers).close()


at_shutdown(SHUTDOWN_ORDER, _close_at_exit)

"""What the benches measure a process and a run by: CPU seconds (this process's, or another
one's by PID) and the commit the run was made on."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cpu_seconds() -> float:
    """CPU seconds (user + system) this process has used."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def commit() -> str:
    """HEAD's commit, with ``+changes`` when orsgen/ or bench/ differ from it."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "orsgen", "bench")
    return git("rev-parse", "HEAD") + ("+changes" if dirty else "")

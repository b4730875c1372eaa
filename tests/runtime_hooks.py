"""Test-only handles on the process's runtime state, through the public surface of
:class:`orsgen.runtime.process.Runtime` (the runtime itself carries no test hooks)."""

from __future__ import annotations

from orsgen.runtime import prefetch
from orsgen.runtime.process import current


def forget_learned_state() -> None:
    """Close unused prefetched sessions and forget what the process learned: prefetch
    patterns, drift verdicts and outage records, so each test starts from scratch."""
    prefetch.forget()
    runtime = current()
    runtime.drift.clear()
    runtime.servers.clear()


def drain(timeout: float = 5.0) -> None:
    """Wait for the background session closes of this process."""
    current().drain(timeout)


def clients_for(url: str) -> int:
    """How many HTTP clients this process holds for ``url``."""
    return sum(1 for known in current().clients if url in known)

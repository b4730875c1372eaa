"""Test-only handles on the process's runtime state, through the public functions of the
modules that own it (the runtime itself carries no test hooks)."""

from __future__ import annotations

from orsgen.runtime.records import metrics
from orsgen.runtime.sessions import drift, pool
from orsgen.runtime.transport import health, http
from orsgen.runtime.transport.process import current


def forget_learned_state() -> None:
    """Close unused prefetched sessions and forget what the process learned: prefetch
    patterns, drift verdicts, health records and the run's environments, so each test
    starts from scratch."""
    pool.forget()
    metrics.counts().expect(())
    drift.forget()
    health.forget()


def drain(timeout: float = 5.0) -> None:
    """Wait for the background session closes of this process."""
    pool.drain(timeout)


def clients_for(url: str) -> int:
    """How many HTTP clients this process holds for ``url``."""
    return sum(1 for known in current().part(http.Clients) if url in known)

"""The run log (issue 47): one typed record of a rollout (:class:`Rollout`) and one reader of
every run (:func:`open_run`). A leaf: it imports only :mod:`orsgen.rundir` and
:mod:`orsgen.recorded_package`."""

from __future__ import annotations

from orsgen.runlog.open import Kind, Run, RunSpec, open_run
from orsgen.runlog.record import JSON, EnvCall, Rollout, RunError, Usage, Verdict

__all__ = [
    "JSON",
    "EnvCall",
    "Kind",
    "Rollout",
    "Run",
    "RunError",
    "RunSpec",
    "Usage",
    "Verdict",
    "open_run",
]

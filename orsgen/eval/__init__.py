"""Evaluate a model on an ORS environment through a generated adapter (``orsgen eval``;
needs ``orsgen[eval]``): :func:`evaluate`, :func:`merge_shards`, :func:`compare_runs`."""

from orsgen.eval.compare import compare_runs, format_comparison, load_summary
from orsgen.eval.config import EvalConfig, EvalConfigError
from orsgen.eval.endpoints import EndpointsDown
from orsgen.eval.merge import merge_shards
from orsgen.eval.results import Record
from orsgen.eval.run import EvalResult, RunUsage, evaluate
from orsgen.runtime.records.passk import pass_at_k, pass_hat_k
from orsgen.rundir import RunError

RunFileError = RunError  # a run directory that cannot be used as asked (one line, exit code 2)

__all__ = [
    "EndpointsDown",
    "EvalConfig",
    "EvalConfigError",
    "EvalResult",
    "Record",
    "RunFileError",
    "RunUsage",
    "compare_runs",
    "evaluate",
    "format_comparison",
    "load_summary",
    "merge_shards",
    "pass_at_k",
    "pass_hat_k",
]

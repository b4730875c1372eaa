"""Evaluate a model on an ORS environment through a generated adapter (``orsgen eval``;
needs ``orsgen[eval]``): :func:`evaluate`, :func:`merge_shards` of a sharded run, and
:func:`sft_dataset` of the passing rollouts of runs (``orsgen sft``).
"""

from orsgen.eval.compare import compare, format_comparison, load_summary
from orsgen.eval.config import EvalConfig, EvalConfigError
from orsgen.eval.endpoints import EndpointsDown
from orsgen.eval.merge import merge_shards
from orsgen.eval.results import Record, RunFileError
from orsgen.eval.run import EvalResult, evaluate
from orsgen.eval.sft import SftError, sft_dataset
from orsgen.runtime.passk import pass_at_k, pass_hat_k

__all__ = [
    "EndpointsDown",
    "EvalConfig",
    "EvalConfigError",
    "EvalResult",
    "Record",
    "RunFileError",
    "SftError",
    "compare",
    "evaluate",
    "format_comparison",
    "load_summary",
    "merge_shards",
    "pass_at_k",
    "pass_hat_k",
    "sft_dataset",
]

"""Evaluate a model on an ORS environment through a generated adapter (``orsgen eval``).

``evaluate(EnvClass, EvalConfig(model=..., endpoint=...)) -> EvalResult`` runs each task
of a split ``n`` times against an OpenAI-compatible endpoint (or several replicas), with
the tools, prompts and tool results the model sees in TRL training. Needs ``orsgen[eval]`` (openai, tqdm, matplotlib).
``merge_shards(shard_dirs, out)`` makes one run of the shards of a run
(``EvalConfig(shard=(I, N))``, ``orsgen eval --shard I/N``; ``orsgen eval --merge``).
``sft_dataset(run_dirs) -> datasets.Dataset`` turns the passing rollouts of runs into rows
for TRL's ``SFTTrainer`` (``orsgen sft``; needs ``datasets``).
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

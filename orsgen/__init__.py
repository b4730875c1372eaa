"""orsgen: snapshot an ORS environment and generate a typed TRL adapter package.

``__all__`` is exactly the public surface. Names load lazily (PEP 562): generated packages
import ``orsgen.runtime`` through this, and openai / transformers load only when used.
"""

from __future__ import annotations

from orsgen._version import __version__ as __version__

# Not typing.TYPE_CHECKING: importing typing would be most of this module's cost. Type
# checkers read any TYPE_CHECKING as true.
TYPE_CHECKING = False

# Public name -> the module that defines it. One table: __all__, the lazy lookup and the
# docs' API reference (tests/test_docs_namespace.py) all read it.
_PUBLIC: dict[str, str] = {
    # Generating a package from Python (what `orsgen TARGET -o DIR` runs).
    "Request": "orsgen.generate.pipeline.run",
    "RequestError": "orsgen.generate.pipeline.run",
    "Result": "orsgen.generate.pipeline.run",
    "run": "orsgen.generate.pipeline.run",
    # Training: the adapters' settings, datasets, the curriculum and the trainer callbacks.
    "AdapterConfig": "orsgen.runtime.config",
    "bundle_tasks": "orsgen.runtime.dataset",
    "PassRateCurriculum": "orsgen.runtime.choosing.curriculum",
    "CurriculumCheckpoint": "orsgen.runtime.choosing.checkpoint",
    "TaskTableCallback": "orsgen.runtime.task_callback",
    # The pass rule: a rollout passes when scored and its reward >= the threshold.
    "passes": "orsgen.runtime.records.passk",
    "PASS_THRESHOLD": "orsgen.runtime.records.passk",
    # Images as TRL content lists (multimodal=True).
    "Content": "orsgen.runtime.images",
    "ContentPart": "orsgen.runtime.images",
    "ImageLike": "orsgen.runtime.images",
    "ImagePart": "orsgen.runtime.images",
    "TextPart": "orsgen.runtime.images",
    # OpenReward's platform: rollouts in its runs UI, its task difficulty as a prior.
    "UploadRun": "orsgen.runtime.upload",
    "platform_difficulty": "orsgen.runtime.platform",
    "PlatformPriorWarning": "orsgen.runtime.platform",
    # Evaluating a model (`orsgen eval`).
    "evaluate": "orsgen.eval",
    "EvalResult": "orsgen.eval",
    "EvalConfig": "orsgen.eval",
    "EvalConfigError": "orsgen.eval",
    "EndpointsDown": "orsgen.eval",
    "compare_runs": "orsgen.eval.compare",
    "format_comparison": "orsgen.eval",
    "load_summary": "orsgen.eval",
    "merge_shards": "orsgen.eval",
    "pass_at_k": "orsgen.eval",
    "pass_hat_k": "orsgen.eval",
    # Validating an environment before training on it (`orsgen validate`).
    "validate": "orsgen.validation",
    "ValidationResult": "orsgen.validation",
    "Finding": "orsgen.validation",
    "CheckStatus": "orsgen.validation",
    # Rejection-sampling SFT from evaluation runs (`orsgen sft`).
    "sft_dataset": "orsgen.data.sft",
    "SftError": "orsgen.data.sft",
    # The viewer page of an evaluation run or training trajectories (`orsgen view`).
    "write_view": "orsgen.view",
    # Any run (evaluation, merge, replay, training trajectories) as typed rollouts.
    "open_run": "orsgen.runlog",
    "RunSpec": "orsgen.runlog",
    "Rollout": "orsgen.runlog",
    "RunError": "orsgen.runlog",
    # The adapter class of a generated package directory, as `orsgen eval DIR` finds it.
    "load_adapter": "orsgen.eval.command",
    # The errors and warnings a user catches.
    "OrsRuntimeError": "orsgen.runtime.errors",
    "ServerNotConfiguredError": "orsgen.runtime.errors",
    "SessionOpenError": "orsgen.runtime.errors",
    "EnvironmentUnavailableError": "orsgen.runtime.errors",
    "TaskLoadError": "orsgen.runtime.errors",
    "ToolCallFailure": "orsgen.runtime.errors",
    "ToolInputError": "orsgen.runtime.errors",
    "ToolEnvironmentError": "orsgen.runtime.errors",
    "SessionCapError": "orsgen.runtime.sessions.cap",
    "TaskChoiceError": "orsgen.runtime.choosing.tasks",
    "PriorError": "orsgen.runtime.choosing.prior",
    "ToolDriftError": "orsgen.runtime.sessions.drift",
    "ToolDriftWarning": "orsgen.runtime.sessions.drift",
    "RunFileError": "orsgen.eval",
}

# Spelled out for type checkers; tests/test_docs_namespace.py checks it equals _PUBLIC's keys.
__all__ = [
    "AdapterConfig",
    "CheckStatus",
    "Content",
    "ContentPart",
    "CurriculumCheckpoint",
    "EndpointsDown",
    "EnvironmentUnavailableError",
    "EvalConfig",
    "EvalConfigError",
    "EvalResult",
    "Finding",
    "ImageLike",
    "ImagePart",
    "OrsRuntimeError",
    "PASS_THRESHOLD",
    "PassRateCurriculum",
    "PlatformPriorWarning",
    "PriorError",
    "Request",
    "RequestError",
    "Result",
    "Rollout",
    "RunError",
    "RunFileError",
    "RunSpec",
    "ServerNotConfiguredError",
    "SessionCapError",
    "SessionOpenError",
    "SftError",
    "TaskChoiceError",
    "TaskLoadError",
    "TaskTableCallback",
    "TextPart",
    "ToolCallFailure",
    "ToolDriftError",
    "ToolDriftWarning",
    "ToolEnvironmentError",
    "ToolInputError",
    "UploadRun",
    "ValidationResult",
    "bundle_tasks",
    "compare_runs",
    "evaluate",
    "format_comparison",
    "load_adapter",
    "load_summary",
    "merge_shards",
    "open_run",
    "pass_at_k",
    "pass_hat_k",
    "passes",
    "platform_difficulty",
    "run",
    "sft_dataset",
    "validate",
    "write_view",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'orsgen' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what type checkers and editors see; nothing of it runs at import
    from typing import Any

    from orsgen.eval import EndpointsDown as EndpointsDown
    from orsgen.eval import EvalConfig as EvalConfig
    from orsgen.eval import EvalConfigError as EvalConfigError
    from orsgen.eval import EvalResult as EvalResult
    from orsgen.eval import RunFileError as RunFileError
    from orsgen.eval.compare import compare_runs as compare_runs
    from orsgen.eval import evaluate as evaluate
    from orsgen.eval import format_comparison as format_comparison
    from orsgen.eval import load_summary as load_summary
    from orsgen.eval import merge_shards as merge_shards
    from orsgen.eval import pass_at_k as pass_at_k
    from orsgen.eval import pass_hat_k as pass_hat_k
    from orsgen.data.sft import SftError as SftError
    from orsgen.data.sft import sft_dataset as sft_dataset
    from orsgen.eval.command import load_adapter as load_adapter
    from orsgen.runtime.platform import PlatformPriorWarning as PlatformPriorWarning
    from orsgen.runtime.platform import platform_difficulty as platform_difficulty
    from orsgen.runtime.upload import UploadRun as UploadRun
    from orsgen.view import write_view as write_view
    from orsgen.validation import CheckStatus as CheckStatus
    from orsgen.validation import Finding as Finding
    from orsgen.validation import ValidationResult as ValidationResult
    from orsgen.validation import validate as validate
    from orsgen.runlog import Rollout as Rollout
    from orsgen.runlog import RunError as RunError
    from orsgen.runlog import RunSpec as RunSpec
    from orsgen.runlog import open_run as open_run
    from orsgen.generate.pipeline.run import Request as Request
    from orsgen.generate.pipeline.run import RequestError as RequestError
    from orsgen.generate.pipeline.run import Result as Result
    from orsgen.generate.pipeline.run import run as run
    from orsgen.runtime.choosing.checkpoint import CurriculumCheckpoint as CurriculumCheckpoint
    from orsgen.runtime.config import AdapterConfig as AdapterConfig
    from orsgen.runtime.dataset import bundle_tasks as bundle_tasks
    from orsgen.runtime.errors import EnvironmentUnavailableError as EnvironmentUnavailableError
    from orsgen.runtime.errors import OrsRuntimeError as OrsRuntimeError
    from orsgen.runtime.errors import ServerNotConfiguredError as ServerNotConfiguredError
    from orsgen.runtime.errors import SessionOpenError as SessionOpenError
    from orsgen.runtime.errors import TaskLoadError as TaskLoadError
    from orsgen.runtime.errors import ToolCallFailure as ToolCallFailure
    from orsgen.runtime.errors import ToolEnvironmentError as ToolEnvironmentError
    from orsgen.runtime.errors import ToolInputError as ToolInputError
    from orsgen.runtime.images import Content as Content
    from orsgen.runtime.choosing.prior import PriorError as PriorError
    from orsgen.runtime.images import ContentPart as ContentPart
    from orsgen.runtime.images import ImageLike as ImageLike
    from orsgen.runtime.images import ImagePart as ImagePart
    from orsgen.runtime.images import TextPart as TextPart
    from orsgen.runtime.records.passk import PASS_THRESHOLD as PASS_THRESHOLD
    from orsgen.runtime.records.passk import passes as passes
    from orsgen.runtime.choosing.curriculum import PassRateCurriculum as PassRateCurriculum
    from orsgen.runtime.choosing.tasks import TaskChoiceError as TaskChoiceError
    from orsgen.runtime.sessions.cap import SessionCapError as SessionCapError
    from orsgen.runtime.sessions.drift import ToolDriftError as ToolDriftError
    from orsgen.runtime.sessions.drift import ToolDriftWarning as ToolDriftWarning
    from orsgen.runtime.task_callback import TaskTableCallback as TaskTableCallback

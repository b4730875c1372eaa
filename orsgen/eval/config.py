"""``EvalConfig``: what one evaluation is, and the identity of its run (``run.json``)."""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from orsgen.rundir import read_config

DEFAULT_MAX_TURNS = 8
DEFAULT_REQUEST_TIMEOUT = 600.0
DEFAULT_REQUEST_ATTEMPTS = 5
ADAPTER_FIELDS = ("environment", "adapter", "adapter_version", "tools_sha256")


class EvalConfigError(ValueError):
    """An unusable configuration, found before the first rollout (``orsgen eval``: exit 2).
    ``field`` names the :class:`EvalConfig` field (or ``evaluate`` keyword) at fault, if any;
    ``orsgen eval`` names its option instead."""

    def __init__(self, problem: str, field: str | None = None) -> None:
        super().__init__(problem if field is None else f"{field} {problem}")
        self.problem, self.field = problem, field


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    """The parameters of an evaluation and the identity of its run: every field but
    ``num_tasks`` is written to ``run.json``, and a resume or a merge with any field changed
    is refused, naming it (every field can change a verdict). A field left ``None`` is
    filled in by ``evaluate``; the fields are described in docs/evaluating.md. Construction
    raises :class:`EvalConfigError` naming the field."""

    model: str
    endpoint: str | Sequence[str]
    split: str | None = None
    n: int = 1
    num_tasks: int | None = None
    task_indices: tuple[int, ...] | None = None
    max_turns: int = DEFAULT_MAX_TURNS
    temperature: float | None = None
    max_tokens: int | None = None
    max_rollout_tokens: int | None = None
    seed: int | None = None
    pass_threshold: float | None = None
    unfinished_reward: float | None = None
    rollout_timeout: float | None = None
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    environment: str | None = None
    adapter: str | None = None
    adapter_version: str | None = None
    tools_sha256: str | None = None
    shard: tuple[int, int] | None = None
    price: tuple[float, float] | None = None
    # A chat request's budget without a rollout deadline (orsgen/eval/endpoints.py).
    request_attempts: int = DEFAULT_REQUEST_ATTEMPTS

    def __post_init__(self) -> None:
        given: Any = self.endpoint
        if isinstance(given, list | tuple):  # one of several is the string itself
            several: tuple[Any, ...] = tuple(cast("Sequence[Any]", given))
            object.__setattr__(self, "endpoint", several[0] if len(several) == 1 else several)
        if self.task_indices is not None:
            try:
                indices = tuple(int(i) for i in self.task_indices)
            except (TypeError, ValueError):
                raise EvalConfigError(
                    f"must be integers, got {self.task_indices!r}", "task_indices"
                ) from None
            object.__setattr__(self, "task_indices", indices)
        if self.shard is not None:
            object.__setattr__(self, "shard", _shard(self.shard))
        if self.price is not None:
            object.__setattr__(self, "price", _price(self.price))
        _check(self)

    @property
    def endpoints(self) -> tuple[str, ...]:
        """The endpoints' URLs, one or several."""
        return (self.endpoint,) if isinstance(self.endpoint, str) else tuple(self.endpoint)

    def to_json(self) -> dict[str, Any]:
        """``run.json``'s content."""
        out = dataclasses.asdict(self)
        for name in ("task_indices", "endpoint", "shard", "price"):
            if isinstance(out[name], tuple):
                out[name] = list(out[name])
        if out["num_tasks"] is None:  # a run's config names its tasks in task_indices
            del out["num_tasks"]
        return out

    @staticmethod
    def from_json(value: Mapping[str, Any]) -> EvalConfig:
        """The config ``run.json`` holds (fields it lacks take their defaults; unknown
        keys are ignored, so a newer run.json still reads)."""
        names = {f.name for f in dataclasses.fields(EvalConfig)}
        return EvalConfig(**{k: v for k, v in value.items() if k in names})

    @staticmethod
    def load(run: str | Path) -> EvalConfig:
        """The config of the run in directory ``run`` (its ``run.json``)."""
        return EvalConfig.from_json(read_config(run))

    def cost(self, usage: Mapping[str, int | None]) -> float | None:
        """What ``usage`` (a row's) cost at ``price`` (per million prompt and completion
        tokens), unrounded; ``None`` without a price or with unknown tokens."""
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if self.price is None or prompt is None or completion is None:
            return None
        return (prompt * self.price[0] + completion * self.price[1]) / 1e6

    def tasks(self) -> tuple[int, ...]:
        """The tasks this run evaluates, in run order: ``task_indices``, or a shard's part of
        them. Shard ``I`` of ``N`` takes every ``N``-th of the sorted tasks from ``I``, with
        all its samples (so its pass@k and ``score_group`` judge see all of them), and
        neighbouring tasks, often alike in difficulty, go to different shards."""
        tasks = self.task_indices or ()
        if self.shard is None:
            return tasks
        index, count = self.shard
        mine = set(sorted(tasks)[index::count])
        return tuple(task for task in tasks if task in mine)


def adapter_identity(klass: type) -> dict[str, Any]:
    """The adapter fields of a config, from the generated class ``klass``."""
    package = klass.__module__.rpartition(".")[0]
    version = sys.modules.get(f"{package}.version") or sys.modules.get(package)
    return {
        "environment": getattr(klass, "ENV_NAME", None),
        "adapter": klass.__qualname__,  # not the module: it depends on the import path
        "adapter_version": getattr(version, "__version__", None),
        "tools_sha256": str(getattr(klass, "TOOLS_SHA256", "")),
    }


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` (``orsgen eval --shard``) as ``(I, N)``: shard ``I`` of ``N``, ``I`` from 0."""
    index, _, count = text.partition("/")
    try:
        shard = int(index), int(count)
    except ValueError:
        raise EvalConfigError(f"takes I/N (0/3, 1/3, 2/3), got {text!r}", "shard") from None
    return _shard(shard)


def _price(value: Any) -> tuple[float, float]:
    """``value`` as a checked ``(IN, OUT)``: two finite numbers of at least 0."""
    try:
        prompt, completion = value
    except (TypeError, ValueError):
        prompt = completion = -1
    if not (_finite(prompt) and _finite(completion) and prompt >= 0 and completion >= 0):
        raise EvalConfigError(
            f"must be (IN, OUT), two numbers of at least 0 per million tokens; got {value!r}",
            "price",
        )
    return float(prompt), float(completion)


def _shard(value: Any) -> tuple[int, int]:
    """``value`` as a checked ``(I, N)``."""
    try:
        index, count = value
    except (TypeError, ValueError):
        index = count = None
    if not (type(index) is int and type(count) is int):
        raise EvalConfigError(f"must be (I, N), two integers; got {value!r}", "shard")
    if not 0 <= index < count:
        raise EvalConfigError(
            f"{index}/{count} is not a shard I/N with 0 <= I < N (a run of 3 shards: 0/3, 1/3, "
            "2/3)",
            "shard",
        )
    return index, count


def _check(c: EvalConfig) -> None:
    """Every field on its own and in combination (the split's size: ``run.tasks_of``)."""
    model: Any = c.model
    if not isinstance(model, str) or not model:
        raise EvalConfigError(f"must be a non-empty string, got {model!r}", "model")
    urls: tuple[Any, ...] = c.endpoints if isinstance(c.endpoint, str | tuple) else ()
    if not urls or not all(isinstance(u, str) and u for u in urls):
        raise EvalConfigError(
            f"must be a non-empty string or a sequence of them, got {c.endpoint!r}", "endpoint"
        )
    if len(set(c.endpoints)) < len(c.endpoints):
        raise EvalConfigError(f"names one endpoint twice: {c.endpoint!r}", "endpoint")
    optional = ("num_tasks", "max_tokens", "max_rollout_tokens")
    for name in ("n", "max_turns", "request_attempts", *optional):
        value = getattr(c, name)
        if value is None and name in optional:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise EvalConfigError(f"must be an integer of at least 1, got {value!r}", name)
    if c.num_tasks is not None and c.task_indices is not None:
        raise EvalConfigError("pass num_tasks or task_indices, not both")
    if c.task_indices is not None and not c.task_indices:
        raise EvalConfigError("is empty: there is no task to evaluate", "task_indices")
    if c.temperature is not None and not (_finite(c.temperature) and c.temperature >= 0):
        raise EvalConfigError(f"must be at least 0, got {c.temperature!r}", "temperature")
    for name in ("pass_threshold", "unfinished_reward"):
        value = getattr(c, name)
        if value is not None and not _finite(value):
            raise EvalConfigError(f"must be a finite number, got {value!r}", name)
    for name in ("rollout_timeout", "request_timeout"):
        value = getattr(c, name)
        if value is not None and not (_finite(value) and value > 0):
            raise EvalConfigError(f"must be a positive number of seconds, got {value!r}", name)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)

"""``EvalConfig``: what one evaluation is. ``evaluate`` runs with it, writes it as
``run.json``, refuses to resume a run whose ``run.json`` differs from it, and returns it
as ``EvalResult.config``; ``orsgen eval --compare`` reads it back from both runs."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_MAX_TURNS = 8


class EvalConfigError(ValueError):
    """An unusable configuration, found before the first rollout (``orsgen eval`` says it
    in one line and exits 2)."""


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    """The identity of an evaluation run: every field is written to ``run.json`` under
    its own name, and a resume with any field changed is refused, naming it.

    ``endpoint`` is the endpoint's public URL (no credentials, no query); ``n`` the
    samples per task; ``task_indices`` the tasks, in order; the adapter fields come from
    the generated class (``environment`` is its ``ENV_NAME``)."""

    model: str
    endpoint: str
    environment: str | None
    adapter: str
    adapter_version: str | None
    tools_sha256: str
    split: str
    n: int
    task_indices: tuple[int, ...]
    max_turns: int = DEFAULT_MAX_TURNS
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    pass_threshold: float = 1.0
    unfinished_reward: float | None = None

    @staticmethod
    def for_adapter(
        klass: type,
        *,
        model: str,
        endpoint: str,
        split: str,
        task_indices: Sequence[int],
        **rest: Any,
    ) -> EvalConfig:
        """The config of an evaluation of the generated adapter class ``klass``."""
        return EvalConfig(
            model=model,
            endpoint=endpoint,
            environment=getattr(klass, "ENV_NAME", None),
            adapter=klass.__qualname__,  # not the module: it depends on the import path
            adapter_version=_package_version(klass),
            tools_sha256=str(getattr(klass, "TOOLS_SHA256", "")),
            split=split,
            task_indices=tuple(int(i) for i in task_indices),
            **rest,
        )

    def to_json(self) -> dict[str, Any]:
        """``run.json``'s content."""
        out = dataclasses.asdict(self)
        out["task_indices"] = list(self.task_indices)
        return out

    @staticmethod
    def from_json(value: Mapping[str, Any]) -> EvalConfig:
        """The config ``run.json`` holds (fields it lacks take their defaults; unknown
        keys are ignored, so a newer run.json still reads)."""
        names = {f.name for f in dataclasses.fields(EvalConfig)}
        given = {k: v for k, v in value.items() if k in names}
        given["task_indices"] = tuple(int(i) for i in given.get("task_indices") or ())
        return EvalConfig(**given)

    @staticmethod
    def load(run: Path) -> EvalConfig:
        """The config of the run in directory ``run`` (its ``run.json``)."""
        return EvalConfig.from_json(json.loads((run / "run.json").read_text()))

    def differences(self, other: EvalConfig, fields: Sequence[str] | None = None) -> list[str]:
        """The names of the fields (all, or those of ``fields``) whose values differ."""
        names = fields or [f.name for f in dataclasses.fields(self)]
        return [name for name in names if getattr(self, name) != getattr(other, name)]


def _package_version(klass: type) -> str | None:
    package = klass.__module__.rpartition(".")[0]
    module = sys.modules.get(f"{package}.version") or sys.modules.get(package)
    return getattr(module, "__version__", None)

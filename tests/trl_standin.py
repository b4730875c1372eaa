"""Stand-ins of TRL's trainers: only what orsgen/runtime/records/trainer_facts.py reads of
them, in methods that call the adapter as TRL's own do. trainer_facts reads the locals of
TRL's frames alone, told by their module's name, so the tests load this file as a module
of TRL's (:func:`as_trl`: ``trl.orsgen_standin``)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from types import ModuleType
from typing import Any


class GRPOTrainer:
    """num_generations, environments and args.seed; resets as GRPOTrainer does
    (``environment.reset(**row)`` from its own method)."""

    class args:  # noqa: N801 - mirrors trainer.args
        seed = 11

    num_generations = 3
    environments: list[object] = []

    def reset_all(self, env: Any, row: dict[str, Any]) -> str:
        return str(env.reset(**row))


class Factories:
    """Builds environments as TRL's trainers do: ``self.environment_factories[name]()``."""

    def __init__(self, factories: dict[Any, Callable[[], Any]]) -> None:
        self.environment_factories = factories

    def build(self, name: Any) -> Any:
        return self.environment_factories[name]()


def as_trl() -> ModuleType:
    """This file loaded as ``trl.orsgen_standin``, so its frames are TRL's."""
    spec = importlib.util.spec_from_file_location("trl.orsgen_standin", __file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

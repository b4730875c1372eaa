"""examples/echo_env.py with its grader changed, and nothing else (``orsgen replay`` of a
training run's trajectories, tests/test_e2e_grpo_visibility.py): ``echo`` scores the
target word 0.0 and any other word 1.0, and finishes where it did. Its name, splits, tasks
and tools (schemas and descriptions) are the example's, so the generated echo package
replays against it with no drift.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from openreward.environments import ToolOutput, tool

_spec = importlib.util.spec_from_file_location(
    "echo_env_example", Path(__file__).resolve().parents[2] / "examples" / "echo_env.py"
)
assert _spec is not None and _spec.loader is not None
example = sys.modules["echo_env_example"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)  # registered first: pydantic resolves its annotations there


class EchoEnv(example.EchoEnv):  # type: ignore[misc, name-defined]
    """Echo the target word to score."""

    @tool
    def echo(self, params: example.EchoInput) -> ToolOutput:  # type: ignore[name-defined]
        """Echo a word back; scores 1.0 when it is the target word."""
        out = example.EchoEnv.echo(self, params)
        return out.model_copy(update={"reward": 1.0 - out.reward})

"""examples/echo_env.py after a change that moves a task tool between tasks: ``hint`` is now
offered by task 2 (cherry) alone, no longer by task 0 (apple). The shared tools are
unchanged. Served as ``echoenv``, for the per-task drift tests."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

from echo_env import EchoEnv as _Echo  # noqa: E402
from echo_env import HintInput  # noqa: E402

from openreward.environments import ListToolsOutput, ToolSpec  # noqa: E402


class EchoEnv(_Echo):
    """Echo the target word to score."""

    def list_task_tools(self) -> ListToolsOutput:
        if self.task_spec.get("target") != "cherry":
            return ListToolsOutput(tools=[])
        spec = ToolSpec(
            name="hint",
            description=(_Echo.hint.__doc__ or "").strip(),
            input_schema=HintInput.model_json_schema(),
        )
        return ListToolsOutput(tools=[spec])

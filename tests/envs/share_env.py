"""An environment whose group judge (ORS score_group) splits one point among the group: a
task's ``n`` samples judged together get ``1/n`` each, and a group judged in parts gets more
(1.0 alone, 0.5 in a pair). tests/test_eval_faults.py uses it to see that a resumed run
judges whole groups. The prompt quotes a word (``tests/openai_standin.py --quote``), and
``echo`` is unscored: the group judge decides."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from openreward.environments import (
    Environment,
    GroupCandidate,
    GroupScore,
    TextBlock,
    ToolOutput,
    tool,
)

TASKS = [{"target": word} for word in ("fig", "grape", "lemon", "mango")]


class EchoInput(BaseModel):
    text: str = Field(description="The word to echo back.")


class ShareEnv(Environment):
    """Echo the word; the group shares one point."""

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["test"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return TASKS

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"Call echo with the word {self.task_spec['target']!r}.")]

    @tool
    def echo(self, params: EchoInput) -> ToolOutput:
        """Echo a word back (unscored: the group judge decides)."""
        return ToolOutput(blocks=[TextBlock(text=f"echo: {params.text}")])

    async def score_group(self, candidates: Sequence[GroupCandidate]) -> Sequence[GroupScore]:
        share = 1.0 / len(candidates)
        return [GroupScore(reward=share, metadata={"group": len(candidates)}) for _ in candidates]

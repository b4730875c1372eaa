"""An environment that judges GRPO groups itself (ORS score_group)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from openreward.environments import (
    Environment,
    GroupCandidate,
    GroupScore,
    TextBlock,
    ToolOutput,
    tool,
)


class Guess(BaseModel):
    word: str


class JudgeEnv(Environment):
    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train", "broken"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        if split == "broken":  # its judge fails (orsgen eval puts why on each row)
            return [{"target": "cherry", "broken": True}]
        return [{"target": "apple"}, {"target": "banana"}]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"Say a word close to {self.task_spec['target']!r}.")]

    @tool
    def guess(self, params: Guess) -> ToolOutput:
        """Try a word (unscored: the group judge decides)."""
        return ToolOutput(blocks=[TextBlock(text="ok")])

    async def score_group(self, candidates: Sequence[GroupCandidate]) -> Sequence[GroupScore]:
        if self.task_spec.get("broken"):
            raise RuntimeError("the judge is down")
        # Comparative: the share of the target's letters each answer has, ranked in the group.
        target = set(str(self.task_spec["target"]))
        texts = [c.messages[-1].blocks[-1].text for c in candidates]
        raw = [len(target & set(t)) / len(target) for t in texts]
        best = max(raw) or 1.0
        return [GroupScore(reward=r / best, metadata={"raw": r}) for r in raw]

"""An ORS environment whose grader crashes on some tasks and whose calls break on the
server on others, for the training-trust tests (issue 17). Served as ``trustenv``.

Six tasks in ``train``, each a word to echo; the prompt reads the way
tests/standin_vllm.py expects ("Call echo with the word 'apple'."). ``echo`` scores 1.0
for the task's word and 0.0 for any other (a wrong answer is a real score) and finishes
the episode, except:

- on a ``crash`` task the grader raises while scoring (a grader failure);
- on a ``break`` task the call fails before it does anything (a backend the tool needs is
  down: an environment failure).

``hint`` answers without a reward and never finishes (a rollout that only asks for hints
is unfinished).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from openreward.environments import Environment, TextBlock, ToolOutput, tool

WORDS = ["apple", "banana", "cherry", "damson", "elder", "fig"]
MODES = {1: "crash", 4: "break"}  # task index -> how it fails; every other task works


class EchoInput(BaseModel):
    text: str = Field(description="The word to echo.")


class HintInput(BaseModel):
    pass


class TrustEnv(Environment):
    """Echo the task's word."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [{"word": w, "mode": MODES.get(i, "ok")} for i, w in enumerate(WORDS)]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=f"Call echo with the word {self.task_spec['word']!r}.")]

    @tool
    async def echo(self, params: EchoInput) -> ToolOutput:
        """Echo a word; scores 1.0 when it is the task's word."""
        mode = self.task_spec["mode"]
        if mode == "break":
            raise ConnectionError("the echo backend is unavailable")
        reward = 1.0 if params.text == self.task_spec["word"] else 0.0
        if mode == "crash":
            raise RuntimeError(f"grader crashed while scoring {params.text!r}")
        return ToolOutput(
            blocks=[TextBlock(text=f"echo: {params.text}")], reward=reward, finished=True
        )

    @tool
    async def hint(self, params: HintInput) -> ToolOutput:
        """Get a hint about the word (no reward)."""
        word = self.task_spec["word"]
        return ToolOutput(blocks=[TextBlock(text=f"It starts with {word[0]!r}.")], finished=False)

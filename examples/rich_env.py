"""A richer ORS environment: the shapes a reviewer should see in generated code.

The committed package ``generated/rich`` is generated from it, so the golden output
shows what orsgen does with:

- wire names that are not Python names: a keyword (``import``), dashes (``open-doc``,
  ``max-results``) and a collision (``page-size`` beside ``page_size``);
- enums (``Literal``), optional values and lists;
- nested objects, validated client-side by ``models.py`` (``Filters`` holds a ``Range``,
  and two tools share it);
- a task tool (``peek``, offered only by tasks that have a note);
- a terminal tool (``submit``): the model answers in plain text and ``outcome_reward``
  routes that text to it.

Serve it:  python examples/rich_env.py --port 8080
Generate:  orsgen examples/rich_env.py -o generated/rich
"""

from __future__ import annotations

import argparse
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from openreward.environments import (
    Environment,
    ListToolsOutput,
    Server,
    TextBlock,
    ToolOutput,
    ToolSpec,
    terminal,
    tool,
)

TASKS = [
    {"question": "Which paper introduced GRPO?", "answer": "deepseekmath", "note": "2024"},
    {"question": "Which library hosts GRPOTrainer?", "answer": "trl", "note": None},
]


class Range(BaseModel):
    low: int = Field(0, description="Lowest year, inclusive.")
    high: int | None = Field(None, description="Highest year, inclusive; open when unset.")


class Filters(BaseModel):
    tags: list[str] = Field(default_factory=list, description="Every tag must match.")
    year: Range | None = Field(None, description="Publication years.")
    kind: Literal["book", "paper", "code"] | None = None


class SearchInput(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    query: str = Field(description="What to look for.")
    in_: Literal["title", "body", "any"] = Field("any", alias="in", description="Where to look.")
    max_results: int | None = Field(None, alias="max-results", description="At most this many.")
    filters: Filters | None = Field(None, description="Narrow the results.")


class OpenInput(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    id: int = Field(description="A result id from search.")
    page_size: int = Field(20, description="Lines per page.")
    page_size_legacy: int | None = Field(
        None, alias="page-size", description="Old spelling of page_size."
    )


class ImportInput(BaseModel):
    ids: list[int] = Field(description="Result ids to save.")
    filters: Filters | None = Field(None, description="Only save results that match.")


class PeekInput(BaseModel):
    part: Literal["start", "end"] = "start"


class Answer(BaseModel):
    answer: str = Field(description="The final answer.")


class RichEnv(Environment):
    """Answer a question by searching a small library."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return TASKS

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=str(self.task_spec["question"]))]

    @tool
    def search(self, params: SearchInput) -> ToolOutput:
        """Search the library."""
        return ToolOutput(blocks=[TextBlock(text=f"0 results for {params.query!r}")])

    @tool
    def open_doc(self, params: OpenInput) -> ToolOutput:
        """Open a search result."""
        return ToolOutput(blocks=[TextBlock(text=f"document {params.id}")])

    @tool
    def import_(self, params: ImportInput) -> ToolOutput:
        """Save results to the reading list."""
        return ToolOutput(blocks=[TextBlock(text=f"saved {len(params.ids)}")])

    @tool(shared=False)
    def peek(self, params: PeekInput) -> ToolOutput:
        """Peek at the task's note (only on tasks that have one)."""
        return ToolOutput(blocks=[TextBlock(text=str(self.task_spec.get("note")))])

    @terminal
    @tool
    def submit(self, params: Answer) -> ToolOutput:
        """Grade the final answer."""
        right = params.answer.strip().lower() == self.task_spec["answer"]
        return ToolOutput(blocks=[TextBlock(text="graded")], reward=float(right), finished=True)

    def list_task_tools(self) -> ListToolsOutput:
        if not self.task_spec.get("note"):
            return ListToolsOutput(tools=[])
        spec = ToolSpec(
            name="peek",
            description=(RichEnv.peek.__doc__ or "").strip(),
            input_schema=PeekInput.model_json_schema(),
        )
        return ListToolsOutput(tools=[spec])


# Wire names that Python cannot spell, as servers in other languages use them: the ORS
# server finds a tool by its wire name, so the methods are attached under those names.
setattr(RichEnv, "open-doc", RichEnv.open_doc)
setattr(RichEnv, "import", RichEnv.import_)
del RichEnv.open_doc, RichEnv.import_


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    opts = parser.parse_args()
    Server([RichEnv]).run(host=opts.host, port=opts.port)

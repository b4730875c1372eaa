"""The fenced code blocks of README.md and docs/**/*.md, for tests/test_docs_*.py.

The conventions the docs are written to (docs/internals.md, "Documented code is tested"):

- every ```python block runs, and every shell block (```bash, ```sh, ```shell, ```console)
  with a line that runs ``orsgen``, unless the line right before its opening fence is
  ``<!-- not-run: REASON -->`` (a reason is required);
- ``<!-- slow: REASON -->`` there instead: the block runs, in the slow tier;
- a page runs top to bottom: a block runs after the earlier blocks of its page (a fast block
  after the earlier fast ones), whatever order the tests are in;
- ``<!-- file: NAME -->`` there: the block is a file the page's later blocks use; the tests
  write it as NAME into the page's workspace (the directory its blocks run in) and do not run
  it;
- ``http://127.0.0.1:8080`` (and ``--port 8080``) in a block is the example environment's server
  (``python examples/echo_env.py --port 8080``): the tests give it the session's echo server
  and drop the line that would start it;
- ``http://127.0.0.1:8001/v1`` in a Python block is an OpenAI-compatible endpoint serving the
  model ``./my-model``: the tests serve the tiny model warmed up on the echo environment
  (examples/tiny_model.py) with ``transformers serve`` and put its endpoint and name there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ("python", "py", "pycon")
SHELL = ("bash", "sh", "shell", "console")
MARKER = re.compile(r"^<!--\s*(not-run|slow|file):\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
ECHO_URL = "http://127.0.0.1:8080"
MODEL_URL = "http://127.0.0.1:8001/v1"
MODEL = "./my-model"
# A shell line that starts the example server the tests stand in for.
STARTS_ECHO_SERVER = re.compile(r"^\s*python\s+examples/echo_env\.py\s+--port\s+8080\s*&")


@dataclass(frozen=True)
class Block:
    page: Path  # relative to the repository root
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    marker: str | None  # "not-run", "slow" or "file"
    reason: str  # the marker's text: a reason, or a file name

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def is_python(self) -> bool:
        return self.language in PYTHON

    @property
    def is_shell(self) -> bool:
        return self.language in SHELL

    @property
    def runs_orsgen(self) -> bool:
        return any(_command(line) == "orsgen" for line in shell_lines(self.code))

    @property
    def runnable(self) -> bool:
        """Whether the tests run it (slow or not)."""
        if self.marker in ("not-run", "file"):
            return False
        return self.is_python or (self.is_shell and self.runs_orsgen)


def pages() -> list[Path]:
    """README.md and every Markdown page of the site, relative to the root."""
    found = [Path("README.md"), *sorted(p.relative_to(ROOT) for p in (ROOT / "docs").rglob("*.md"))]
    return [p for p in found if (ROOT / p).is_file()]


def blocks(page: Path) -> list[Block]:
    lines = (ROOT / page).read_text(encoding="utf-8").split("\n")
    out: list[Block] = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        indent, fence, language = opened.groups()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        body = [
            line[len(indent) :] if line.startswith(indent) else line for line in lines[i + 1 : end]
        ]
        before = MARKER.match(lines[i - 1].strip()) if i else None
        out.append(
            Block(
                page=page,
                line=i + 1,
                language=language.lower(),
                code="\n".join(body) + "\n",
                marker=before[1] if before else None,
                reason=before[2] if before else "",
            )
        )
        i = end + 1
    return out


def all_blocks() -> list[Block]:
    return [b for page in pages() for b in blocks(page)]


def shell_lines(code: str) -> list[str]:
    """The block's commands: continuation lines joined, comments and prompts dropped."""
    joined = code.replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line.startswith("$ "):
            line = line[2:]
        if line and not line.startswith("#"):
            out.append(line)
    return out


def _command(line: str) -> str:
    """The program a shell line runs (after VAR=value assignments)."""
    words = line.split()
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]
    return words[0] if words else ""

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
  (examples/tiny_model.py) with ``transformers serve`` and put its endpoint and name there;
- every import of every ```python block resolves, blocks that do not run included (a
  ``not-run`` sketch, a ``file``): a sketch that does not parse as a whole (``f(a=1, ...)``, a
  signature) has its import lines read alone. A ``generated.NAME`` the repository does not hold
  is the package a page writes with ``orsgen FILE -o generated/NAME`` from its
  ``<!-- file: FILE -->`` block.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import textwrap
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


def imports(code: str) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of a block. A block that does not parse as a whole (a sketch
    with placeholders, a signature) still has its import lines read, each alone (with its
    parenthesised continuation lines)."""
    try:
        tree: ast.AST = ast.parse(code)
    except SyntaxError:
        tree = ast.Module(body=_import_lines(code), type_ignores=[])
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def _import_lines(code: str) -> list[ast.stmt]:
    lines = code.splitlines()
    found: list[ast.stmt] = []
    for start, line in enumerate(lines):
        if not re.match(r"^\s*(import|from)\s", line):
            continue
        for end in range(start + 1, len(lines) + 1):
            try:
                found += ast.parse(textwrap.dedent("\n".join(lines[start:end]))).body
                break
            except SyntaxError:
                continue
    return found


def unresolved(sources: list[tuple[str, str]]) -> list[str]:
    """The imports of ``(where, code)`` pairs that do not resolve in this interpreter, each
    as ``where: from M import N`` (or ``where: import M``)."""
    wrong: list[str] = []
    for where, code in sources:
        for node in imports(code):
            if isinstance(node, ast.Import):
                wrong += [f"{where}: import {a.name}" for a in node.names if not _module(a.name)]
                continue
            module = "." * node.level + (node.module or "")
            found = _module(module) if node.level == 0 else None
            for alias in node.names:
                if found is None or not (
                    _has(found, alias.name) or _module(f"{module}.{alias.name}")
                ):
                    wrong.append(f"{where}: from {module} import {alias.name}")
    return wrong


def _has(module: object, name: str) -> bool:
    """Whether ``module`` defines ``name``; a name in its ``__all__`` counts without being
    loaded (``orsgen``'s lazy namespace: tests/test_docs_namespace.py loads each of them)."""
    return name in vars(module) or name in getattr(module, "__all__", ()) or hasattr(module, name)


def _module(name: str) -> object | None:
    try:
        return importlib.import_module(name) if importlib.util.find_spec(name) else None
    except ImportError:  # a parent package that is missing, or a module that fails to import
        return None

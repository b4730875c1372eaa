"""Every import of every Python block of README.md and docs/ resolves (issue 34), blocks no test
runs included: a ``not-run`` sketch's misspelt ``EchoEnv`` fails here. Resolved in a fresh
interpreter whose path holds this checkout and the packages the docs generate (a page's
``orsgen FILE -o generated/NAME`` from its ``<!-- file: FILE -->`` block, run once here)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import docs_blocks
from conftest import ROOT

PYTHON_BLOCKS = [b for b in docs_blocks.all_blocks() if b.is_python]


def _generated_from_files() -> dict[str, tuple[docs_blocks.Block, list[str]]]:
    """generated/NAME -> (the file block, the orsgen arguments) for each package a page
    writes from one of its file blocks; the page's last such line wins, as a reader's would."""
    found: dict[str, tuple[docs_blocks.Block, list[str]]] = {}
    for page in docs_blocks.pages():
        blocks = docs_blocks.blocks(page)
        files = {b.reason: b for b in blocks if b.marker == "file"}
        for block in blocks:
            if not block.is_shell:
                continue
            for line in docs_blocks.shell_lines(block.code):
                words = shlex.split(line, comments=True)
                target = words[1] if len(words) > 1 and words[0] == "orsgen" else None
                out = re.fullmatch(r"generated/(\w+)", _option(words, "-o") or "")
                if target in files and out:
                    found[out[1]] = (files[target], words[1:])
    return found


def _option(words: list[str], name: str) -> str | None:
    return words[words.index(name) + 1] if name in words[:-1] else None


def _environment(path: list[Path]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENREWARD_", "OPENAI_"))}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in path)
    env["OPENREWARD_DISABLE_UPDATE_CHECK"] = "1"
    return env


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding copies of generated/ and the packages the docs generate."""
    ws = tmp_path_factory.mktemp("docs-imports")
    shutil.copytree(ROOT / "generated", ws / "generated", ignore=shutil.ignore_patterns("__py*"))
    for name, (file_block, args) in _generated_from_files().items():
        if (ws / "generated" / name).exists():
            continue
        (ws / file_block.reason).write_text(file_block.code, encoding="utf-8")
        run = subprocess.run(
            [sys.executable, "-m", "orsgen", *args],
            cwd=ws,
            env=_environment([ROOT]),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, f"{file_block.page}: orsgen {shlex.join(args)}\n{run.stderr}"
    return ws


def _unresolved(sources: list[tuple[str, str]], workspace: Path) -> list[str]:
    code = "import json, sys, docs_blocks; print(json.dumps(docs_blocks.unresolved(json.load(sys.stdin))))"
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=workspace,
        env=_environment([workspace, ROOT, ROOT / "tests"]),
        input=json.dumps(sources),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    return list(json.loads(run.stdout.splitlines()[-1]))


@pytest.mark.slow  # orsgen processes and a fresh interpreter importing everything
def test_every_import_of_every_python_block_resolves(workspace: Path) -> None:
    assert any(b.marker == "not-run" for b in PYTHON_BLOCKS)
    assert _unresolved([(b.id, b.code) for b in PYTHON_BLOCKS], workspace) == []


@pytest.mark.slow  # the same workspace and fresh interpreter
def test_a_misspelt_name_in_the_readmes_sketch_fails(workspace: Path) -> None:
    sketch = next(b for b in docs_blocks.blocks(Path("README.md")) if b.is_python)
    assert sketch.marker == "not-run" and "from generated.echo import EchoEnv," in sketch.code
    wrong = sketch.code.replace("EchoEnv", "EchEnv", 1)
    misspelt_module = sketch.code.replace("generated.echo", "generated.ecoh", 1)
    assert _unresolved([("typo", wrong), ("module", misspelt_module)], workspace) == [
        "typo: from generated.echo import EchEnv",
        "module: from generated.ecoh import EchoEnv",
        "module: from generated.ecoh import load_tasks",
        "module: from generated.ecoh import outcome_reward",
    ]


def test_a_sketch_that_does_not_parse_still_has_its_imports_read() -> None:
    sketch = (
        "import functools\n"
        "from orsgen import (\n    PassRateCurriculum,\n    NoSuchName,\n)\n"
        "trainer = GRPOTrainer(model=..., args=GRPOConfig(max_steps=6, ...))\n"
    )
    found = [
        (getattr(n, "module", None), [a.name for a in n.names]) for n in docs_blocks.imports(sketch)
    ]
    assert found == [(None, ["functools"]), ("orsgen", ["PassRateCurriculum", "NoSuchName"])]


def test_the_docs_generate_the_packages_their_blocks_import_that_the_repository_lacks() -> None:
    generated = _generated_from_files()
    assert "quiz" in generated, generated  # docs/getting-started.md's my_env.py
    block, args = generated["quiz"]
    assert block.reason == "my_env.py" and args[0] == "my_env.py"

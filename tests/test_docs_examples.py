"""Documented code is tested (issue 28): every Python block of README.md and docs/ runs, and
every shell block that runs ``orsgen``, against a real echo server (tests/docs_blocks.py has
the conventions: ``<!-- not-run: REASON -->``, ``<!-- slow: REASON -->``, ``<!-- file: NAME -->``).
Each page's blocks run in a workspace of their own holding copies of examples/ and generated/,
so a block that writes ``generated/echo`` never touches the repository's."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import docs_blocks
import ors_server
from conftest import ROOT
from docs_blocks import ECHO_URL, MODEL, MODEL_URL, STARTS_ECHO_SERVER, Block

pytestmark = pytest.mark.timeout(600)

ALL = docs_blocks.all_blocks()
RUN = [b for b in ALL if b.runnable]


def _param(block: Block) -> object:
    marks = [pytest.mark.slow] if block.marker == "slow" else []
    return pytest.param(block, id=block.id, marks=marks)


# --- the conventions themselves ----------------------------------------------------------


def test_the_collector_finds_the_pages_and_their_blocks() -> None:
    pages = {str(p) for p in docs_blocks.pages()}
    assert {"README.md", "docs/index.md", "docs/evaluating.md"} <= pages, pages
    assert sum(b.is_python for b in RUN) >= 5 and sum(b.is_shell for b in RUN) >= 2


def test_every_marker_gives_a_reason_and_sits_on_a_fence() -> None:
    for page in docs_blocks.pages():
        lines = (ROOT / page).read_text(encoding="utf-8").split("\n")
        for n, line in enumerate(lines):
            marked = docs_blocks.MARKER.match(line.strip())
            if marked is None:
                continue
            where = f"{page}:{n + 1}"
            assert marked[2], f"{where}: {marked[1]} needs a reason"
            after = lines[n + 1] if n + 1 < len(lines) else ""
            assert docs_blocks.FENCE.match(
                after
            ), f"{where}: the marker must sit right before a fence"


def test_a_file_block_names_a_plain_file() -> None:
    for block in ALL:
        if block.marker == "file":
            assert "/" not in block.reason and block.reason.strip() == block.reason, block.id


# --- running them ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def workspaces(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], Path]:
    made: dict[Path, Path] = {}

    def workspace(page: Path) -> Path:
        if page not in made:
            ws = tmp_path_factory.mktemp("docs-" + page.stem)
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache")
            for name in ("examples", "generated"):
                shutil.copytree(ROOT / name, ws / name, ignore=ignore)
            for block in docs_blocks.blocks(page):
                if block.marker == "file":
                    (ws / block.reason).write_text(block.code, encoding="utf-8")
            made[page] = ws
        return made[page]

    return workspace


@pytest.fixture(scope="session")
def shims(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``orsgen``, ``python`` and ``mypy`` as this interpreter runs them, first on PATH (a
    virtualenv's own scripts may name another interpreter)."""
    bin_dir = tmp_path_factory.mktemp("docs-bin")
    for name, run in {
        "orsgen": f'"{sys.executable}" -m orsgen',
        "python": f'"{sys.executable}"',
        "python3": f'"{sys.executable}"',
        "mypy": f'"{sys.executable}" -m mypy',
        "basedpyright": f'"{sys.executable}" -m basedpyright',
    }.items():
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\nexec {run} "$@"\n', encoding="utf-8")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bin_dir


@pytest.fixture(scope="session")
def model_endpoint(
    echo_server: ors_server.RunningServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """``transformers serve`` of the tiny model warmed up on the echo environment (what
    examples/train_echo.py starts from): the endpoint and the model name a block's
    ``http://127.0.0.1:8001/v1`` and ``./my-model`` stand for."""
    from generated.echo import EchoEnv, load_tasks
    from serve_model import start_model_server
    from tiny_model import build_tiny_model
    from train_echo import warm_up_episodes

    tools = EchoEnv(base_url=echo_server.url)
    episodes = warm_up_episodes(echo_server.url, load_tasks(base_url=echo_server.url), 1.0)
    model_dir = build_tiny_model(
        tmp_path_factory.mktemp("docs-model") / "my-model",
        tools=[tools.echo, tools.hint],
        episodes=episodes,
        tool_name="echo",
    )
    server = start_model_server(model_dir, tmp_path_factory.mktemp("docs-model-logs"))
    try:
        yield server.endpoint, server.model
    finally:
        server.stop()


def _environment(shims: Path, workspace: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENREWARD_", "OPENAI_"))}
    env.update(
        PATH=f"{shims}{os.pathsep}{env.get('PATH', '')}",
        # The workspace's copies first, then this checkout's orsgen (not an install's links,
        # which may predate a module added since).
        PYTHONPATH=os.pathsep.join([str(workspace), str(ROOT)]),
        OPENREWARD_DISABLE_UPDATE_CHECK="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
    )
    return env


def _run_shell(block: Block, url: str, cwd: Path, env: dict[str, str]) -> None:
    lines = [line for line in block.code.splitlines() if not STARTS_ECHO_SERVER.match(line)]
    script = "set -euo pipefail\n" + "\n".join(lines).replace(ECHO_URL, url) + "\n"
    process = subprocess.Popen(
        ["bash", "-c", script],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: what it starts in the background ends with it
    )
    try:
        out, _ = process.communicate(timeout=540)
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    assert process.returncode == 0, f"{block.id} exited {process.returncode}:\n{out[-6000:]}"


def _earlier(block: Block) -> list[Block]:
    """The blocks a page runs before ``block``, in page order: a page is read top to bottom,
    so a block may use what an earlier one wrote (a run directory, a file). A fast block's
    are the earlier fast ones (the fast tier never waits on a slow block); a slow block's are
    all earlier ones."""
    before = [b for b in RUN if b.page == block.page and b.line < block.line]
    return before if block.marker == "slow" else [b for b in before if b.marker != "slow"]


@pytest.fixture(scope="session")
def ran() -> dict[str, str | None]:
    """Every block run this session, by id: None when it passed, else why it failed."""
    return {}


@pytest.mark.usefixtures("fresh_runtime")
@pytest.mark.parametrize("block", [_param(b) for b in RUN])
def test_the_block_runs(
    block: Block,
    echo_server: ors_server.RunningServer,
    workspaces: Callable[[Path], Path],
    shims: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    ran: dict[str, str | None],
) -> None:
    # Whatever order the tests run in, a block runs after the page's earlier blocks (each
    # runs once a session: one run as another block's prerequisite is its own run).
    for each in [*_earlier(block), block]:
        if each.id not in ran:
            ran[each.id] = "did not finish"
            try:
                _run_block(each, echo_server, workspaces(each.page), shims, monkeypatch, request)
            except BaseException as failed:
                ran[each.id] = f"{type(failed).__name__}: {str(failed)[-2000:]}"
                raise
            ran[each.id] = None
        failure = ran[each.id]
        if failure is not None:
            pytest.fail(f"{each.id} failed, so {block.id} cannot run after it: {failure}")


def _run_block(
    block: Block,
    echo_server: ors_server.RunningServer,
    workspace: Path,
    shims: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    if block.is_shell:
        _run_shell(block, echo_server.url, workspace, _environment(shims, workspace))
        return
    monkeypatch.chdir(workspace)
    source = block.code.replace(ECHO_URL, echo_server.url)
    if MODEL_URL in source:
        endpoint, model = request.getfixturevalue("model_endpoint")
        source = source.replace(MODEL_URL, endpoint).replace(repr(MODEL), repr(model))
        source = source.replace(f'"{MODEL}"', repr(model))
    code = compile(source, block.id, "exec")
    exec(code, {"__name__": "docs_block"})


def test_the_quickstart_fixes_no_port_and_says_why_it_does_not_learn() -> None:
    """A fixed port (8080) may belong to another server on the user's machine, which the
    later commands would then talk to; and its two GRPO steps, which start at reward 1.0,
    learn nothing: the page says so rather than letting the comparison suggest otherwise."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    (block,) = [b for b in RUN if b.page == Path("README.md") and "eval_demo.py" in b.code]
    assert block.code in section
    assert "8080" not in section and "--port" not in block.code, block.code
    assert "--base-url" not in block.code and "--url" not in block.code  # each starts its own
    words = " ".join(section.split())
    assert "start at reward 1.0" in words and "no gradient" in words, words

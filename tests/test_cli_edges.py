"""The edges of the command line (issue 39, item 9), each through ``python -m orsgen`` as its
own process: ``orsgen compare`` and ``orsgen merge`` are their ``orsgen eval --compare`` and
``--merge`` aliases byte for byte (issue 47, in this process); ``orsgen eval`` without the
eval extra says what to install; ``orsgen help [COMMAND]``; and an upload to a
runs UI that cannot be reached is said in one line. The runs are of the echo environment
(a real ORS server) against the scripted stand-in endpoint (tests/openai_standin.py)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import openai_standin
import ors_server
from conftest import ROOT, CliRun, eval_args, run_eval

from orsgen.eval import EvalConfig, evaluate
from orsgen.eval.command import load_adapter

ECHO = ROOT / "generated" / "echo"
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai_standin.Standin]:
    server = openai_standin.start(
        tmp_path_factory.mktemp("standin"), tool="echo", argument="text", quote=3
    )
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def runs(
    standin: openai_standin.Standin,
    echo_server: ors_server.RunningServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    """``a`` and ``b`` (two seeds) and ``s0``, ``s1`` (the shards of ``a``)."""
    root = tmp_path_factory.mktemp("runs")
    klass = load_adapter(str(ECHO), None)
    for name, seed, shard in [("a", 11, None), ("b", 12, None), ("s0", 11, 0), ("s1", 11, 1)]:
        config = EvalConfig(
            model=standin.model,
            endpoint=standin.endpoint,
            split="test",
            n=2,
            seed=seed,
            shard=None if shard is None else (shard, 2),
        )
        adapter = {"base_url": echo_server.url}
        evaluate(klass, config, adapter=adapter, out=root / name, progress=False)
    return root


def _one_error(code: int, out: str, err: str, command: str = "eval") -> str:
    lines = err.splitlines()
    assert code == 2 and out == "", (code, out, err)
    assert len(lines) == 1 and lines[0].startswith(f"orsgen {command}: error: "), err
    return lines[0]


# `orsgen compare` and `orsgen merge` against their aliases, `orsgen eval --compare` and
# `orsgen eval --merge` (each case its code, what a line of its stdout or stderr says, and
# whether it writes --out): runs compared by directory or run.json, forced, refused and short
# of runs, an option the command does not take; shards merged, short of one, partially.
ALIASED = [
    (["compare", "{a}", "{b}"], 0, "pass@1 B-A: "),
    (["compare", "{a}/run.json", "{b}/run.json", "--format", "json", "--seed", "3"], 0, '"runs"'),
    (["compare", "{a}", "{b}", "{threshold}"], 2, "the runs differ in pass_threshold (1.0 and 0.5"),
    (["compare", "{a}", "{threshold}", "--force", "--format", "csv"], 0, "warning: the runs"),
    (["compare", "{a}"], 2, "takes two runs or more"),
    (["compare", "{a}", "{b}", "--no-progress"], 2, "unrecognized arguments: --no-progress"),
    (["merge", "{s0}", "{s1}", "--out", "{out}", "--min-coverage", "0.5"], 0, "8 rollouts on"),
    (["merge", "{s0}", "--out", "{out}"], 2, "shard 1/2 missing: "),
    (["merge", "{s1}", "--out", "{out}", "--partial"], 0, "results in {out}: "),
    (["merge", "{s0}", "{s1}", "--out", "{out}", "-n", "5"], 2, "unrecognized arguments: -n"),
]


def _in_process(args: list[str]) -> CliRun:
    """``orsgen.cli.main(args)`` here (no interpreter to start), argparse's exit included."""
    from orsgen.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:
            code = int(exc.code or 0)
    return CliRun(code, out.getvalue(), err.getvalue())


@pytest.mark.parametrize(("args", "code", "said"), ALIASED)
def test_compare_and_merge_are_their_eval_aliases_byte_for_byte(
    args: list[str], code: int, said: str, runs: Path, tmp_path: Path
) -> None:
    """The same exit code, stdout, stderr and files in --out (at the same depth, so that
    run.json's package is the same relative path), the refusals included."""
    threshold = tmp_path / "threshold"  # b, of another pass rule
    if not threshold.exists():
        shutil.copytree(runs / "b", threshold)
        summary = json.loads((threshold / "summary.json").read_text())
        (threshold / "summary.json").write_text(json.dumps({**summary, "pass_threshold": 0.5}))
    done = []
    for spelling in ("new", "old"):
        out = tmp_path / spelling / "merged"
        out.parent.mkdir()
        names = {
            "out": out,
            "threshold": threshold,
            **{n: runs / n for n in ("a", "b", "s0", "s1")},
        }
        given = [arg.format(**names) for arg in args]
        if spelling == "old":
            given = ["eval", f"--{given[0]}", *given[1:]]
        run = _in_process(given)
        files = {p.name: p.read_bytes() for p in sorted(out.glob("*")) if p.is_file()}
        files.pop(".lock", None)
        done.append((run.code, run.stdout, run.stderr.replace(str(out), "OUT"), files))
        assert run.code == code and said.format(**names) in run.stdout + run.stderr, run
    assert done[0] == done[1]
    assert bool(done[0][3]) == (args[0] == "merge" and code == 0)


# The eval extra's openai as an environment without it has it: not found by the import
# system (a finder ahead of the others, installed by a sitecustomize module on the path).
_NO_OPENAI = """
import sys

class NoOpenAI:
    def find_spec(self, name, path=None, target=None):
        if name == "openai" or name.startswith("openai."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoOpenAI())
"""


def test_eval_without_its_extra_says_what_to_install(runs: Path, tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent(_NO_OPENAI))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])

    def orsgen_eval(*args: str) -> tuple[int, str, str]:
        done = subprocess.run(
            [sys.executable, "-m", "orsgen", "eval", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return done.returncode, done.stdout, done.stderr

    dead = f"http://127.0.0.1:{ors_server.free_port()}"
    args = [str(ECHO), "--endpoint", f"{dead}/v1", "--model", "m", "--base-url", dead]
    line = _one_error(*orsgen_eval(*args))
    assert "No module named 'openai'" in line and "pip install 'orsgen[eval]'" in line, line
    merged = orsgen_eval("--merge", str(runs / "s0"), "--out", str(tmp_path / "m"))
    assert "pip install 'orsgen[eval]'" in _one_error(*merged, "merge"), merged
    # What needs none of it still works: --help, compare.
    code, out, err = orsgen_eval("--compare", str(runs / "a"), str(runs / "b"))
    assert code == 0 and "pass@1 B-A: " in out, err
    code, out, _ = orsgen_eval("--help")
    assert code == 0 and out.startswith("usage: orsgen eval")


def test_help_shows_the_help(orsgen_subprocess) -> None:  # type: ignore[no-untyped-def]
    done: CliRun = orsgen_subprocess(["help"])
    assert done.code == 0 and done.stdout.startswith("usage: orsgen [-h] -o OUTPUT"), done
    assert "orsgen help COMMAND" in done.stdout
    for command in ("eval", "sft", "check"):
        done = orsgen_subprocess(["help", command])
        assert done.code == 0 and done.stdout.startswith(f"usage: orsgen {command} "), done
    done = orsgen_subprocess(["help", "evl"])
    assert done.code == 2 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("orsgen help: error: ")
    for command in ("check", "eval", "sft", "pairs", "view", "replay", "serve"):
        assert command in done.stderr.split("error: ")[1], done.stderr


@pytest.mark.slow  # seconds of real processes; the fast tier stays under 4 min
def test_an_unreachable_runs_ui_is_said_in_one_line(
    standin: openai_standin.Standin, echo_server: ors_server.RunningServer, tmp_path: Path
) -> None:
    api = f"http://127.0.0.1:{ors_server.free_port()}"  # nothing listens there
    args = eval_args(ECHO, echo_server, standin) + ["--split", "test", "--upload-run", "edges"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
    env.update(OPENREWARD_DISABLE_UPDATE_CHECK="1", PYTHONPATH=str(ROOT))
    env.update(OPENREWARD_API_URL=api, OPENREWARD_API_KEY="or-edges-key")
    done = subprocess.run(
        [sys.executable, "-m", "orsgen", "eval", *args, "--out", str(tmp_path / "run")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out, err = done.stdout, done.stderr
    assert done.returncode == 0, err
    assert out.count("\n") == 1 and out.startswith("4 rollouts on split 'test'"), out  # no SDK line
    said = [line for line in err.splitlines() if "upload" in line or "runs UI" in line]
    assert len(said) == 1, err
    assert said[0].startswith("runs UI: 0 rollouts uploaded to run 'edges', 4 dropped (")
    assert api in said[0], said[0]


def test_loading_a_package_never_shadows_an_installed_one() -> None:
    """load_adapter keeps generated/ on sys.path but last: generated/rich (a sibling of
    generated/echo) must not stand for the rich library TRL imports, in this process or in
    the children AsyncGRPO spawns with its sys.path."""
    code = (
        "import importlib.util, sys\n"
        "from orsgen.eval.command import load_adapter\n"
        f"load_adapter({str(ECHO)!r}, None)\n"
        "spec = importlib.util.find_spec('rich')\n"
        "print(spec.origin if spec else '')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert str(ECHO.parent) not in done.stdout, done.stdout

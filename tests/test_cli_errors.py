"""Unusable targets: exit code 2, exactly one error line on stderr, no traceback, nothing written.

Each case runs ``python -m orsgen`` as its own process (the way a user or CI sees it).
An unknown ``--env-name`` is covered in test_cli_multi_env.py.
The processes are independent, so they run concurrently in a module fixture and each
test asserts on one result.
"""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

import pytest

import ors_server

pytestmark = pytest.mark.timeout(180)

BAD_FILES = {
    "syntax_error.py": "def broken(:\n    pass\n",
    "no_environment.py": "class NotAnEnvironment:\n    pass\n",
    "raises_on_import.py": "raise RuntimeError('kaboom\\nsecond line of the message')\n",
    "exits_on_import.py": "import sys\nsys.exit(5)\n",
    "abstract_only.py": (
        "from openreward.environments import Environment\n" "class Half(Environment):\n    pass\n"
    ),
    "splits_raise.py": (
        "from pydantic import BaseModel\n"
        "from openreward.environments import Environment, TextBlock, ToolOutput, tool\n"
        "class P(BaseModel):\n    x: int\n"
        "class Broken(Environment):\n"
        "    @classmethod\n"
        "    def list_splits(cls):\n        raise RuntimeError('no splits today')\n"
        "    @classmethod\n"
        "    def list_tasks(cls, split):\n        return []\n"
        "    def get_prompt(self):\n        return [TextBlock(text='x')]\n"
        "    @tool\n"
        "    def t(self, params: P) -> ToolOutput:\n        return ToolOutput(blocks=[])\n"
    ),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory, echo_server, orsgen_subprocess):
    tmp = tmp_path_factory.mktemp("cli-errors")
    (tmp / "out").mkdir()  # -o into a missing directory is refused before the target is read
    for name, text in BAD_FILES.items():
        (tmp / name).write_text(text)
    (tmp / "a_plain_file").write_text("not a package directory\n")
    closed_port = ors_server.free_port()
    cases = {
        "unreachable url": ([f"http://127.0.0.1:{closed_port}"], f"127.0.0.1:{closed_port}"),
        "missing file": ([str(tmp / "missing_env.py")], "missing_env.py"),
        "not a target": (["definitely not a target"], "definitely not a target"),
        "not an http url": (["ftp://127.0.0.1/x"], "ftp://"),
        **{name: ([str(tmp / name)], name) for name in BAD_FILES},
    }
    jobs = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        for case, (args, _) in cases.items():
            out = tmp / "out" / case.replace(" ", "_")
            jobs[case] = (pool.submit(orsgen_subprocess, [*args, "-o", str(out)]), out)
        # -o naming an existing regular file
        jobs["output is a file"] = (
            pool.submit(orsgen_subprocess, [echo_server.url, "-o", str(tmp / "a_plain_file")]),
            None,
        )
    cases["output is a file"] = ([], "a_plain_file")
    return {case: (job.result(), out, cases[case][1]) for case, (job, out) in jobs.items()}


CASES = [
    "unreachable url",
    "missing file",
    "not a target",
    "not an http url",
    *BAD_FILES,
    "output is a file",
]


@pytest.mark.parametrize("case", CASES)
def test_unusable_target_is_one_line_exit_2(case, results) -> None:
    run, out, mention = results[case]
    assert run.code == 2, (run.code, run.stderr)
    assert "Traceback" not in run.stderr
    # Not run with -q, yet the error is the only line: no progress before it, except
    # "connecting to" and the retries while a server that never answers is tried.
    lines = run.stderr.splitlines()
    if case == "unreachable url":
        progress, lines = lines[:-1], lines[-1:]
        assert progress[0].startswith("orsgen: connecting to "), run.stderr
        assert all("not answering yet" in line for line in progress[1:]), run.stderr
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("orsgen: error: "), run.stderr
    assert mention in lines[0]
    assert run.stdout == ""
    if out is not None:
        assert not out.exists()


def test_the_file_cases_say_what_went_wrong(results) -> None:
    assert "SyntaxError" in results["syntax_error.py"][0].stderr
    assert "kaboom" in results["raises_on_import.py"][0].stderr
    assert "sys.exit" in results["exits_on_import.py"][0].stderr
    assert "no splits today" in results["splits_raise.py"][0].stderr
    for case in ("no_environment.py", "abstract_only.py"):
        assert "Environment" in results[case][0].stderr


def test_the_output_file_was_left_alone(results, tmp_path_factory) -> None:
    run, _, _ = results["output is a file"]
    path = Path(run.stderr.split("error: ", 1)[1].split(" ", 1)[0])
    assert path.read_text() == "not a package directory\n"


def test_near_miss_targets_say_what_to_type(tmp_path: Path, orsgen_cli) -> None:
    # In process: these are refused before any network or import of the SDK.
    package = tmp_path / "generated" / "shop"
    package.mkdir(parents=True)
    (package / "snapshot.json").write_text("{}\n")
    near_misses = {
        "localhost:8091": "did you mean http://localhost:8091?",
        "127.0.0.1:8091/": "did you mean http://127.0.0.1:8091/?",
        str(package): f"`orsgen {package.as_posix()}/snapshot.json -o {package}`",
    }
    for target, hint in near_misses.items():
        run = orsgen_cli([target, "-o", str(tmp_path / "out")])
        assert run.code == 2, (target, run.stderr)
        assert hint in run.stderr, (target, run.stderr)
        assert run.stderr.count("\n") == 1, run.stderr
    assert not (tmp_path / "out").exists()


def test_check_of_a_near_miss_directory_says_what_to_type(tmp_path: Path, orsgen_cli) -> None:
    package = tmp_path / "generated" / "shop"
    package.mkdir(parents=True)
    (package / "snapshot.json").write_text("{}\n")
    run = orsgen_cli(["check", str(package / "snapshot.json")])
    assert run.code == 2 and f"`orsgen check {package}`" in run.stderr, run.stderr
    run = orsgen_cli(["check", str(package.parent)])
    assert run.code == 2 and f"`orsgen check {package}`" in run.stderr, run.stderr


def test_every_option_is_explained_in_help() -> None:
    from orsgen.cli import COMMANDS

    for parser in (command.build() for command in COMMANDS):
        unexplained = [a.dest for a in parser._actions if not a.help]
        assert unexplained == [], (parser.prog, unexplained)


def test_an_unreachable_server_is_worded_as_the_runtime_words_it(results) -> None:
    # orsgen.runtime.errors.describe, which load_tasks and reset() use too; not aiohttp's
    # "Cannot connect to host ... ssl:default [Connect call failed ...]".
    run, _, mention = results["unreachable url"]
    last = run.stderr.splitlines()[-1]
    assert last.endswith(
        f"cannot connect to {mention}: connection refused (is the server running?)"
    )
    assert "ssl:default" not in run.stderr and "Connect call failed" not in run.stderr

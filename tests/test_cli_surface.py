"""One error surface (issue 34), as a new user meets it from a fresh clone: every error is one
line ``orsgen COMMAND: error: ...`` (exit 2 for usage, 1 for a failure after the work
started), a mistyped command is named, a missing option is named, every cheap check runs
before any network call, ``-o`` never makes a directory outside the working directory, and
``orsgen eval`` ends with one readable line. Each case runs ``python -m orsgen`` as its own
process; the endpoint given is dead unless a test needs one (tests/openai_standin.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import openai_standin
import ors_server
import view_runs
from conftest import ROOT, CliRun

pytestmark = pytest.mark.timeout(180)

PACKAGE = str(ROOT / "generated" / "echo")  # generated from a file: it records no server URL


def _dead() -> str:
    return f"http://127.0.0.1:{ors_server.free_port()}/v1"  # nothing listens there


def _one_line(run: CliRun, prefix: str) -> str:
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), run.stderr
    assert run.stdout == "", run.stdout
    return lines[0]


@pytest.mark.parametrize(
    ("args", "prefix"),
    [
        (["sft", "RUN"], "orsgen sft: error: the following arguments are required: -o/--out"),
        (["view", "no-such-run"], "orsgen view: error: "),
        (["check", "no-such-package"], "orsgen check: error: "),
        (
            ["eval", PACKAGE, "--endpoint", "http://127.0.0.1:9/v1", "-n", "0"],
            "orsgen eval: error: ",
        ),
        (["no-such-file.py", "-o", "x"], "orsgen: error: "),
    ],
)
def test_every_error_is_one_line_prefixed_with_its_command(args, prefix, orsgen_subprocess) -> None:
    run = orsgen_subprocess(args)
    assert run.code == 2, run.stderr
    _one_line(run, prefix)


@pytest.mark.parametrize(("typed", "meant"), [("veiw", "view"), ("evl", "eval"), ("sfy", "sft")])
def test_a_mistyped_command_says_did_you_mean(typed, meant, orsgen_subprocess) -> None:
    run = orsgen_subprocess([typed, "RUN"])
    assert run.code == 2, run.stderr
    line = _one_line(run, "orsgen: error: ")
    assert line.endswith(f"unknown command {typed!r}; did you mean {meant!r}?"), line


def test_a_missing_required_option_is_named(orsgen_subprocess) -> None:
    run = orsgen_subprocess(["eval", PACKAGE, "--endpoint", _dead()])
    assert run.code == 2, run.stderr
    line = _one_line(run, "orsgen eval: error: ")
    assert line.endswith("required: --model"), line
    run = orsgen_subprocess(["eval"])
    line = _one_line(run, "orsgen eval: error: ")
    assert line.endswith("required: DIR, --endpoint, --model"), line


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--endpoint", "notaurl"], "argument --endpoint: 'notaurl' is not an http(s) URL"),
        (["--split", "nosuch"], "split 'nosuch' does not exist; "),
        (["--split", "test", "--indices", "0,99"], "--indices names 99, past the end of split"),
        ([], "give one with --base-url URL or set OPENREWARD_SESSION_URL"),
        (["--out", "/no-such-dir-orsgen/run"], "--out /no-such-dir-orsgen/run: directory"),
        (["--resume"], "--resume needs --out RUN"),
    ],
)
def test_every_cheap_check_comes_before_any_network_call(extra, said, orsgen_subprocess) -> None:
    """The endpoint is dead: a command that reached for it would say "does not answer"."""
    base = ["eval", PACKAGE, "--endpoint", _dead(), "--model", "m"]
    if not said.startswith("give one"):
        base += ["--base-url", _dead().removesuffix("/v1")]
    run = orsgen_subprocess(base + extra)
    assert run.code == 2, run.stderr
    line = _one_line(run, "orsgen eval: error: ")
    assert said in line and "does not answer" not in line, line
    assert not Path("/no-such-dir-orsgen").exists()


def test_output_into_a_missing_directory_outside_the_working_directory_is_refused(
    orsgen_subprocess, tmp_path
) -> None:
    run_dir = view_runs.eval_run(tmp_path / "run", 1, 1)
    missing = tmp_path / "missing"
    for args in (
        ["view", str(run_dir), "-o", str(missing / "x.html")],
        ["sft", str(run_dir), "-o", str(missing / "dataset")],
        [str(ROOT / "generated" / "echo" / "snapshot.json"), "-o", str(missing / "echo")],
    ):
        run = orsgen_subprocess(args)
        assert run.code == 2, (args, run.stderr)
        line = run.stderr.strip().splitlines()[-1]
        assert f"directory {missing} does not exist" in line, line
        assert not missing.exists(), args
    run = orsgen_subprocess(["view", str(run_dir), "-o", str(tmp_path / "x.html")])
    assert run.code == 0 and (tmp_path / "x.html").is_file(), run.stderr


# --- a real run: the echo server and the scripted stand-in endpoint ----------------------


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai_standin.Standin]:
    server = openai_standin.start(tmp_path_factory.mktemp("standin"), tool="echo")
    try:
        yield server
    finally:
        server.stop()


def _no_gradient(summary: dict[str, Any]) -> str:
    """What report.md must say of the tasks that pass always or never."""
    tasks = [
        t["task_index"]
        for t in summary["per_task"]
        if t["scored"] == summary["n"] and t["pass_at_k"]["1"] in (0.0, 1.0)
    ]
    if not tasks:
        return "none"
    return f"task{'s' if len(tasks) > 1 else ''} {', '.join(map(str, tasks))}"


@pytest.mark.slow  # two `orsgen eval` processes
def test_a_run_ends_with_one_line_and_a_finished_run_resumes_in_one_line(
    echo_server, standin, orsgen_subprocess, tmp_path
) -> None:
    out = tmp_path / "run"
    args = ["eval", PACKAGE, "--endpoint", standin.endpoint, "--model", standin.model]
    args += ["--base-url", echo_server.url, "--split", "test", "-n", "2", "--out", str(out)]
    run = orsgen_subprocess(args)
    assert run.code == 0, run.stderr
    (line,) = run.stdout.splitlines()  # one readable line, not a raw dict
    assert line.startswith("8 rollouts on split 'test' in ") and "{" not in line, line
    assert ": coverage 1.000, mean reward 0.000, pass@1 0.000, pass@2 0.000" in line, line
    assert line.endswith(", zero-variance share at G=2: 1.000"), line

    summary = json.loads((out / "summary.json").read_text())
    report = (out / "report.md").read_text()
    said = report.split("no gradient (always or never passing): ", 1)[1].splitlines()[0]
    assert said == _no_gradient(summary) == "tasks 0, 1, 2, 3", said

    again = orsgen_subprocess(args + ["--resume"])  # progress bar on: none is drawn
    assert again.code == 0, again.stderr
    said = [s for s in again.stderr.splitlines() if not s.startswith(("results in", "read every"))]
    assert said == [f"the run in {out} is complete (8 rollouts): nothing to run"], again.stderr
    assert again.stdout.splitlines()[0].startswith("8 rollouts on split 'test' in ")


# --- evaluate() from Python: typed, the adapter's settings through adapter= ---------------


def test_evaluate_takes_one_config_and_the_adapter_settings_through_adapter(
    echo_server, standin, tmp_path, monkeypatch
) -> None:
    import inspect

    from generated.echo import EchoEnv
    from orsgen import AdapterConfig, EvalConfig, EvalConfigError, evaluate

    kinds = {p.kind for p in inspect.signature(evaluate).parameters.values()}
    assert inspect.Parameter.VAR_KEYWORD not in kinds  # no **kwargs
    config = EvalConfig(endpoint=standin.endpoint, model=standin.model, split="test", n=1)
    with pytest.raises(TypeError, match="endpoint"):
        evaluate(EchoEnv, endpoint=standin.endpoint, model=standin.model)  # type: ignore[call-arg]
    with pytest.raises(EvalConfigError, match="unexpected keyword.*sede"):
        evaluate(EchoEnv, config, adapter={"base_url": echo_server.url, "sede": 1})
    monkeypatch.delenv("OPENREWARD_SESSION_URL", raising=False)
    with pytest.raises(EvalConfigError, match="OPENREWARD_SESSION_URL"):
        evaluate(EchoEnv, config, out=tmp_path / "none")  # the package records no URL
    assert not (tmp_path / "none").exists()

    given = AdapterConfig.of(EchoEnv, base_url=echo_server.url, prefetch=False)
    for adapter in (given, {"base_url": echo_server.url}):
        result = evaluate(EchoEnv, config, adapter=adapter, progress=False)
        assert result.config is not None and result.config.task_indices == (0, 1, 2, 3)
        assert result.coverage == 1.0 and result.headline().startswith("4 rollouts on split")

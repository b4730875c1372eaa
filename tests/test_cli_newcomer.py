"""What a newcomer hit, from a clean clone and the docs (issue 21, item 8): options
checked before any network, a URL with a path, the docs' own configuration example and
option tables, task tools a default probe cannot see, and a tool argument that cannot be
sent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ors_server
from conftest import ROOT

pytestmark = pytest.mark.timeout(180)

# The pages these examples and tables live on (they moved there from the README, issue 28).
GENERATING = (ROOT / "docs" / "generating.md").read_text(encoding="utf-8")
GETTING_STARTED = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")


def _section(title: str, page: str = GENERATING) -> str:
    """The page's text from the heading ``title`` to the next heading of its level."""
    start = page.index(f"\n## {title}\n")
    end = page.find("\n## ", start + 1)
    return page[start : end if end != -1 else None]


def _block(text: str, language: str) -> str:
    """The first fenced code block of ``language`` in ``text``."""
    return text.split(f"```{language}\n", 1)[1].split("```", 1)[0]


# --- options checked before any network -----------------------------------------------


@pytest.mark.parametrize("value", ["-3", "0", "nan", "soon"])
def test_a_bad_timeout_is_one_line_before_any_network(
    value: str, echo_server: ors_server.RunningServer, orsgen_subprocess, tmp_path: Path
) -> None:
    out = tmp_path / "x"
    run = orsgen_subprocess([echo_server.url, "-o", str(out), "--timeout", value])
    assert run.code == 2, run.stderr
    assert "Traceback" not in run.stderr and "Task exception" not in run.stderr, run.stderr
    assert "connecting" not in run.stderr, run.stderr
    assert run.stderr.count("\n") == 1 and "--timeout" in run.stderr, run.stderr
    assert run.stderr.startswith("orsgen: error: argument --timeout: "), run.stderr
    assert not out.exists()


def test_check_live_checks_its_timeout_too(orsgen_cli) -> None:
    with pytest.raises(SystemExit) as exited:
        orsgen_cli(["check", str(ROOT / "generated" / "echo"), "--live", "--timeout", "-1"])
    assert exited.value.code == 2


def test_a_request_from_python_checks_its_timeout(tmp_path: Path) -> None:
    from orsgen.generate.pipeline.run import Request, RequestError, run

    with pytest.raises(RequestError, match="positive number of seconds"):
        run(Request("http://127.0.0.1:9", tmp_path / "x", timeout=-3))


# --- a URL with a path ---------------------------------------------------------------


def test_a_url_with_a_path_names_the_root_url_and_env_name(
    echo_server: ors_server.RunningServer, orsgen_cli, tmp_path: Path
) -> None:
    run = orsgen_cli([f"{echo_server.url}/echoenv/", "-o", str(tmp_path / "x")])
    assert run.code == 2, run.stderr
    assert run.stderr.count("\n") == 1, run.stderr  # refused before "connecting to"
    assert "trailing" not in run.stderr
    assert f"give the server's root URL '{echo_server.url}' and `--env-name echoenv`" in (
        run.stderr
    ), run.stderr
    # ... and what it says to type works.
    run = orsgen_cli([echo_server.url, "--env-name", "echoenv", "-o", str(tmp_path / "y")])
    assert run.code == 0, run.stderr


# --- the docs' configuration example (docs/generating.md) ------------------------------


def _write_config(directory: Path, text: str) -> Path:
    path = directory / "orsgen.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_readme_configuration_example_works_in_orsgen_toml(
    echo_server: ors_server.RunningServer, orsgen_cli, tmp_path: Path, monkeypatch
) -> None:
    example = _block(_section("Configuration"), "toml")
    monkeypatch.chdir(tmp_path)  # where a user keeps orsgen.toml: found from the cwd
    _write_config(tmp_path, example)
    run = orsgen_cli([echo_server.url, "-o", "generated/echo"])
    assert run.code == 0, run.stderr
    adapter = (tmp_path / "generated" / "echo" / "adapter.py").read_text()
    assert "def get_hint(" in adapter and "def echo(self, word: str" in adapter, adapter
    # The same tables without the tool.orsgen. prefix, as orsgen.toml may spell them.
    _write_config(tmp_path, example.replace("[tool.orsgen.packages.", "[packages."))
    assert orsgen_cli(["check", "generated/echo"]).code == 0

    # A change of the table in force is worded as the file spells it, not as Python reprs.
    _write_config(tmp_path, example.replace('hint = "get_hint"', 'hint = "hint_me"'))
    run = orsgen_cli(["check", "generated/echo"])
    assert run.code == 1, run.stderr
    assert "Renames(" not in run.stderr and "None" not in run.stderr, run.stderr
    assert (
        'rename: {"params": {"echo": {"text": "word"}}, "tools": {"hint": "get_hint"}} in '
        'snapshot.json, {"params": {"echo": {"text": "word"}}, "tools": {"hint": "hint_me"}} '
        "configured"
    ) in " ".join(run.stderr.split()), run.stderr


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (('"echo", "hint"', '"echo", "hnt"'), "include: unknown tool 'hnt'; did you mean 'hint'?"),
        (("exclude = []", 'exclude = ["ecoh"]'), "exclude: unknown tool 'ecoh'; did you mean 'echo'?"),
        (("tools = { hint", "tools = { hitn"), "rename.tools: unknown tool 'hitn'; did you mean 'hint'?"),
        (("[tool.orsgen.packages", "[tool.orsgn.packages"), 'tool: unknown key; the tables are [packages."DIR"]'),
        (("class_name =", "clas_name ="), "unknown key; did you mean 'class_name'?"),
    ],
)  # fmt: skip
def test_a_config_typo_names_the_closest_valid_name(
    change: tuple[str, str],
    said: str,
    echo_server: ors_server.RunningServer,
    orsgen_cli,
    tmp_path: Path,
    monkeypatch,
) -> None:
    example = _block(_section("Configuration"), "toml")
    assert change[0] in example
    monkeypatch.chdir(tmp_path)
    _write_config(tmp_path, example.replace(*change))
    run = orsgen_cli([echo_server.url, "-o", "generated/echo"])
    assert run.code == 2, run.stderr
    assert said in " ".join(run.stderr.split()), run.stderr


# --- the docs' option tables (docs/generating.md) -----------------------------------


def _documented(intro: str) -> set[str]:
    """The options in the first column of the docs' table that follows ``intro``."""
    table = GENERATING.split(intro, 1)[1].split("\n\n", 2)[1]
    firsts = [row.split("|")[1] for row in table.splitlines() if row.startswith("| `")]
    return {o for cell in firsts for o in re.findall(r"`(--?[a-z][a-z-]*)", cell)}


@pytest.mark.parametrize(
    ("intro", "parser"),
    [
        ("Options of `orsgen TARGET`", "generate_parser"),
        ("Options of `orsgen check DIR`", "check_parser"),
    ],
)
def test_the_readme_option_tables_list_every_option(intro: str, parser: str) -> None:
    from orsgen import cli

    options = {o for a in getattr(cli, parser)()._actions for o in a.option_strings}
    documented = _documented(intro)
    assert options - documented == set(), f"missing from docs/generating.md: {options - documented}"
    assert documented - options == set(), f"not options: {documented - options}"


# --- task tools, as docs/getting-started.md shows them ----------------------------------


def test_the_readme_task_tool_and_the_probe_hint(orsgen_cli, tmp_path: Path) -> None:
    example = _block(_section("Serve your own environment", GETTING_STARTED), "python")
    assert "@tool(shared=False)" in example and "def list_task_tools" in example
    env_file = tmp_path / "my_env.py"
    env_file.write_text(example, encoding="utf-8")

    run = orsgen_cli([str(env_file), "-o", str(tmp_path / "quiz0")])
    assert run.code == 0, run.stderr
    hint = (
        "orsgen: 1 shared tool + 0 task tools from the probe of task 0 of 2; "
        "task tools that only other tasks offer need --probe-index N"
    )
    assert hint in run.stderr.splitlines(), run.stderr
    assert "def hint(" not in (tmp_path / "quiz0" / "adapter.py").read_text()

    run = orsgen_cli([str(env_file), "-o", str(tmp_path / "quiz1"), "--probe-index", "1"])
    assert run.code == 0, run.stderr
    assert "--probe-index N" not in run.stderr  # asked for by index: nothing left unasked
    assert "def hint(" in (tmp_path / "quiz1" / "adapter.py").read_text()


# --- an argument that cannot be sent ------------------------------------------------------


@pytest.mark.usefixtures("fresh_runtime")
def test_an_unserialisable_argument_is_the_models_mistake(
    echo_server: ors_server.RunningServer,
) -> None:
    from generated.echo import EchoEnv
    from orsgen.runtime.errors import ToolInputError

    env = EchoEnv(base_url=echo_server.url)
    try:
        env.reset(task_index=0)
        with pytest.raises(ToolInputError) as raised:
            env.echo(text=object())  # type: ignore[arg-type]
        assert raised.value.reason == "invalid_arguments"
        assert "could not be serialised to JSON" in str(raised.value)
        assert "sid=" not in str(raised.value)
        # The session is still there: the call never left this process.
        assert env.echo(text="apple") == "echo: apple"
        assert env.reward == 1.0
    finally:
        env.close()

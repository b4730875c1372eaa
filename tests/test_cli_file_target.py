"""Local Python file targets: served on loopback in-process, like ``python FILE.py``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

HELPER = """
TASKS = [{"word": "kiwi"}, {"word": "lime"}]
"""

ENV = """
from pydantic import BaseModel
from openreward.environments import Environment, TextBlock, ToolOutput, tool

from {helper} import TASKS  # a sibling module, as env files often have


class Guess(BaseModel):
    word: str


class SiblingEnv(Environment):
    def __init__(self, task_spec: dict = {{}}, secrets: dict = {{}}) -> None:
        super().__init__(task_spec, secrets)
        self.task_spec = task_spec

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split):
        return TASKS

    def get_prompt(self):
        return [TextBlock(text="guess")]

    @tool
    def guess(self, params: Guess) -> ToolOutput:
        \"\"\"Guess the word.\"\"\"
        return ToolOutput(blocks=[TextBlock(text="ok")], reward=1.0)
"""


def test_a_file_importing_a_sibling_module(tmp_path: Path, orsgen_cli) -> None:
    project = tmp_path / "project"
    project.mkdir()
    helper = "orsgen_sibling_tasks_7f3a"  # unique: never importable from anywhere else
    (project / f"{helper}.py").write_text(textwrap.dedent(HELPER))
    (project / "sibling_env.py").write_text(textwrap.dedent(ENV.format(helper=helper)))
    out = tmp_path / "sibling"
    run = orsgen_cli([str(project / "sibling_env.py"), "-o", str(out), "-q"])
    assert run.code == 0, run.stderr
    snapshot = json.loads((out / "snapshot.json").read_text())
    assert snapshot["environment"]["identity"]["class_name"] == "SiblingEnv"
    assert [s["num_tasks"] for s in snapshot["environment"]["splits"]] == [2]
    import sys

    assert str(project) not in sys.path  # put back as it was


def test_live_check_of_a_moved_file_target(tmp_path: Path, orsgen_cli) -> None:
    """The recorded file target is gone: ``check --live`` says so only when it is the
    recorded one it looked for, and a given ``--target`` is the one it snapshots."""
    project = tmp_path / "project"
    project.mkdir()
    helper = "orsgen_moved_tasks_2c9e"  # unique: never importable from anywhere else
    (project / f"{helper}.py").write_text(textwrap.dedent(HELPER))
    recorded = project / "moved_env.py"
    recorded.write_text(textwrap.dedent(ENV.format(helper=helper)))
    out = tmp_path / "moved"
    assert orsgen_cli([str(recorded), "-o", str(out), "-q"]).code == 0
    moved = tmp_path / "elsewhere"
    project.rename(moved)

    run = orsgen_cli(["check", str(out), "--live", "-q"])
    assert run.code == 2
    assert f"recorded target {recorded.as_posix()} does not exist here; pass --target" in run.stderr

    given = moved / "gone_env.py"
    run = orsgen_cli(["check", str(out), "--live", "-q", "--target", str(given)])
    assert run.code == 2
    assert f"target {given} does not exist" in run.stderr
    assert "recorded target" not in run.stderr and "pass --target" not in run.stderr

    run = orsgen_cli(["check", str(out), "--live", "--target", str(moved / "moved_env.py")])
    assert run.code == 0, run.stdout + run.stderr
    assert "no drift" in run.stderr


NESTED_ENV = """
from pydantic import BaseModel, Field
from openreward.environments import Environment, TextBlock, ToolOutput, tool


class Address(BaseModel):  # fields deliberately not in sorted order
    street: str = Field(description="Street and number.")
    city: str
    zip_code: str | None = None


class Order(BaseModel):
    ship_to: Address
    item: str


class NestedOrderEnv(Environment):
    def __init__(self, task_spec: dict = {}, secrets: dict = {}) -> None:
        super().__init__(task_spec, secrets)

    @classmethod
    def list_splits(cls):
        return ["test"]

    @classmethod
    def list_tasks(cls, split):
        return [{"item": "hat"}]

    def get_prompt(self):
        return [TextBlock(text="order")]

    @tool
    def order(self, params: Order) -> ToolOutput:
        \"\"\"Place an order.\"\"\"
        return ToolOutput(blocks=[TextBlock(text="ok")], reward=1.0)
"""


def test_a_fresh_package_is_up_to_date(tmp_path: Path, orsgen_cli) -> None:
    # What a live snapshot generates must be what its stored snapshot.json generates, even
    # when a nested model's properties arrive unsorted (the stored JSON sorts them).
    (tmp_path / "nested_env.py").write_text(textwrap.dedent(NESTED_ENV))
    out = tmp_path / "nested"
    run = orsgen_cli([str(tmp_path / "nested_env.py"), "-o", str(out)])
    assert run.code == 0, run.stderr
    # Its last line points to validation (issue 46), but from a stored snapshot.json.
    validate = f"; before training on it: orsgen validate {tmp_path / 'nested_env.py'}\n"
    assert run.stderr.endswith(validate), run.stderr
    again = orsgen_cli([str(out / "snapshot.json"), "-o", str(out)])
    assert again.code == 0 and "orsgen validate" not in again.stderr, again.stderr
    check = orsgen_cli(["check", str(out), "-q"])
    assert check.code == 0, check.stdout + check.stderr


def test_a_file_package_checked_live_against_its_server_has_no_drift(
    echo_server, orsgen_cli
) -> None:
    # generated/echo was snapshotted from examples/echo_env.py; a server running that file
    # reports only the lower-cased environment name, which is not drift.
    echo = Path(__file__).resolve().parents[1] / "generated" / "echo"
    run = orsgen_cli(["check", str(echo), "--live", "--target", echo_server.url, "-q"])
    assert run.code == 0, run.stdout + run.stderr
    assert "drift" not in run.stdout


def test_a_file_that_only_imports_an_environment_names_it(tmp_path: Path, orsgen_cli) -> None:
    helper = "orsgen_reexported_env_5b1d"  # unique: never importable from anywhere else
    (tmp_path / f"{helper}.py").write_text(textwrap.dedent(NESTED_ENV))
    (tmp_path / "reexport.py").write_text(f"from {helper} import NestedOrderEnv\n")
    run = orsgen_cli([str(tmp_path / "reexport.py"), "-o", str(tmp_path / "out")])
    assert run.code == 2, run.stderr
    assert f"imports NestedOrderEnv (from {helper})" in run.stderr, run.stderr
    assert "name the file that defines it" in run.stderr
    assert not (tmp_path / "out").exists()

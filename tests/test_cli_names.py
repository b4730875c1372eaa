"""Honest names: a package whose name shadows a standard-library or an
installed module is a warning, and a name orsgen changes is reported with what changed,
why, and how to import the result."""

from __future__ import annotations

from pathlib import Path

import pytest

from orsgen.generate import naming

pytestmark = pytest.mark.timeout(120)


def _warnings(stderr: str) -> list[str]:
    return [line.strip() for line in stderr.splitlines() if line.strip().startswith("warning:")]


def test_a_stdlib_name_is_a_warning(orsgen_cli, echo_server, tmp_path) -> None:
    run = orsgen_cli([echo_server.url, "-o", str(tmp_path / "math")])
    assert run.code == 0, run.stderr
    (warning,) = _warnings(run.stderr)
    assert "package name 'math' shadows the standard-library module 'math'" in warning
    assert "math_env" in warning  # what to do instead


def test_an_installed_module_name_is_a_warning(orsgen_cli, echo_server, tmp_path) -> None:
    run = orsgen_cli([echo_server.url, "-o", str(tmp_path / "jinja2")])
    assert run.code == 0, run.stderr
    (warning,) = _warnings(run.stderr)
    assert "shadows the installed module 'jinja2'" in warning


def test_a_keyword_directory_says_what_changed_and_how_to_import(
    orsgen_cli, echo_server, tmp_path
) -> None:
    out = tmp_path / "class"
    run = orsgen_cli([echo_server.url, "-o", str(out)])
    assert run.code == 0, run.stderr
    (warning,) = _warnings(run.stderr)
    assert "'class' is a Python keyword" in warning
    assert "named 'env_class'" in warning
    assert "cannot be imported with an import statement" in warning
    assert f"-o {(tmp_path / 'env_class').as_posix()}" in warning


def test_a_dash_is_reported(orsgen_cli, echo_server, tmp_path) -> None:
    run = orsgen_cli([echo_server.url, "-o", str(tmp_path / "my-env"), "--fail-on-warning"])
    assert run.code == 1  # a warning, so --fail-on-warning refuses to write
    (warning,) = _warnings(run.stderr)
    assert "contains '-'" in warning and "named 'my_env'" in warning


def test_a_plain_name_has_no_warning(orsgen_cli, echo_server, tmp_path) -> None:
    run = orsgen_cli([echo_server.url, "-o", str(tmp_path / "plain_echo")])
    assert run.code == 0, run.stderr
    assert _warnings(run.stderr) == []
    # Regenerating over itself: the package does not shadow itself.
    run = orsgen_cli([echo_server.url, "-o", str(tmp_path / "plain_echo")])
    assert _warnings(run.stderr) == []


def test_naming_notes_units(tmp_path) -> None:
    assert naming.import_notes(Path("gen/echo"), "echo") == []
    (note,) = naming.import_notes(Path("gen/2fast"), naming.package_name("2fast"))
    assert "starts with a digit" in note and "env_2fast" in note
    assert naming.shadowed_module("json", tmp_path) == "the standard-library module 'json'"
    assert naming.shadowed_module("surely_nothing_has_this_name_42", tmp_path) is None

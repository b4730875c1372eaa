"""orsgen/runtime/transport/sdk_check.py (issue 34): the first use of the SDK checks that it has
what orsgen/runtime/transport/sdk.py uses of it. An SDK that lacks a name fails in one line
naming it and the tested range; one outside that range gets one warning line naming it. Run
through a generated adapter against a real echo server, with the SDK changed in the child
process before first use (a name deleted; a version its metadata reports)."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ors_server
from conftest import ROOT
from orsgen.runtime.transport import sdk_check

SDK_PY = ROOT / "orsgen" / "runtime" / "transport" / "sdk.py"


def test_the_installed_sdk_has_everything_orsgen_uses_and_lies_in_the_range() -> None:
    assert sdk_check.missing(sdk_check.USES) == []
    assert sdk_check.tested(importlib.metadata.version("openreward"))


def test_uses_lists_exactly_the_sdk_modules_sdk_py_loads() -> None:
    loaded: set[str] = set()
    for node in ast.walk(ast.parse(SDK_PY.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("openreward"):
            loaded.add(str(node.module))
        elif isinstance(node, ast.Import):
            loaded.update(a.name for a in node.names if a.name.startswith("openreward"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and isinstance(node.args[0], ast.Constant)
        ):
            loaded.add(str(node.args[0].value))
    assert loaded == set(sdk_check.USES)


def test_a_name_the_sdk_lacks_is_named() -> None:
    client = "openreward.api.environments.client"
    uses = {
        client: ("AsyncSession._run_or_die", "AsyncSession.no_such", "resumable_sse(no_such)"),
        "openreward.no_such_module": ("anything",),
    }
    assert sdk_check.missing(uses) == [
        f"{client}.AsyncSession.no_such",
        f"{client}.resumable_sse(no_such)",
        "openreward.no_such_module",
    ]


def test_the_tested_range() -> None:
    assert sdk_check.RANGE == f"openreward>={sdk_check.FLOOR},<{sdk_check.CEILING}"
    inside = ["0.1.160", "0.1.167", "0.1.999", "0.1.170.dev1"]
    outside = ["0.1.159", "0.1.0", "0.2.0", "0.2.0rc1", "1.0"]
    assert [sdk_check.tested(v) for v in inside] == [True] * len(inside)
    assert [sdk_check.tested(v) for v in outside] == [False] * len(outside)


def _reset_in_a_child(url: str, before: str, path: list[Path]) -> subprocess.CompletedProcess[str]:
    code = (
        f"{before}\n"
        "from generated.echo import EchoEnv\n"
        f"env = EchoEnv(base_url={url!r})\n"
        "print(env.reset(task_index=0))\n"
        "env.close()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in [*path, ROOT])
    env["OPENREWARD_DISABLE_UPDATE_CHECK"] = "1"
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


def test_an_sdk_that_lacks_a_name_fails_the_first_reset_in_one_line(
    echo_server: ors_server.RunningServer,
) -> None:
    lacking = "import openreward.api.environments.client as c\ndel c._parse_blocks"
    child = _reset_in_a_child(echo_server.url, lacking, [])
    assert child.returncode != 0
    last = child.stderr.splitlines()[-1]  # what the reset raised, its cause's one line inside
    assert last.startswith("orsgen.runtime.errors.SessionOpenError: could not open"), last
    assert "openreward.api.environments.client._parse_blocks, which orsgen uses" in last
    assert f"install '{sdk_check.RANGE}'" in last


@pytest.mark.slow  # a fresh interpreter importing the SDK (the fast tier keeps one)
def test_an_sdk_outside_the_range_is_said_once_and_works(
    echo_server: ors_server.RunningServer, tmp_path: Path
) -> None:
    """Its metadata first on the path reports 0.2.0 (a newer SDK); the code is the installed one."""
    info = tmp_path / "openreward-0.2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: openreward\nVersion: 0.2.0\n")
    child = _reset_in_a_child(echo_server.url, "", [tmp_path])
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "Call echo with the word 'apple'."
    said = [line for line in child.stderr.splitlines() if "orsgen:" in line]
    assert said == [
        f"orsgen: openreward 0.2.0 is outside the range orsgen is tested with ({sdk_check.RANGE})"
    ], child.stderr


@pytest.mark.slow  # a fresh interpreter importing the SDK (the fast tier keeps one)
def test_an_sdk_in_the_range_says_nothing(echo_server: ors_server.RunningServer) -> None:
    child = _reset_in_a_child(echo_server.url, "", [])
    assert child.returncode == 0, child.stderr
    assert "orsgen:" not in child.stderr, child.stderr

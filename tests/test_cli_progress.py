"""Honest progress: "connecting to" first, "connected" only once the server
has answered, a line for every retry while it does not, and counts in plain English."""

from __future__ import annotations

import concurrent.futures

import pytest

import ors_server
from conftest import ENVS

pytestmark = pytest.mark.timeout(180)

FAKE_KEY = "orsgen-fake-progress-key-51c0"


@pytest.fixture(scope="module")
def unreachable(orsgen_subprocess, tmp_path_factory):
    """Two targets on a closed loopback port, run concurrently: a URL and a catalog name."""
    tmp = tmp_path_factory.mktemp("unreachable")
    closed = f"http://127.0.0.1:{ors_server.free_port()}"
    platform = {
        "OPENREWARD_API_KEY": FAKE_KEY,
        "OPENREWARD_SESSION_URL": closed,
        "OPENREWARD_API_URL": closed,
    }
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        url = pool.submit(orsgen_subprocess, [closed, "-o", str(tmp / "url")])
        catalog = pool.submit(orsgen_subprocess, ["Eigent/SETA", "-o", str(tmp / "cat")], platform)
        return {"url": url.result(), "catalog": catalog.result(), "closed": closed}


def test_connected_comes_after_the_server_answered(orsgen_cli, echo_server, tmp_path) -> None:
    run = orsgen_cli([echo_server.url, "-o", str(tmp_path / "progress_echo")])
    assert run.code == 0, run.stderr
    lines = run.stderr.splitlines()
    assert lines[0] == f"orsgen: connecting to the ORS server at {echo_server.url}"
    assert lines[1] == f"orsgen: connected to echoenv at {echo_server.url}"


@pytest.mark.parametrize("case", ["url", "catalog"])
def test_an_unreachable_target_never_says_connected(unreachable, case) -> None:
    run = unreachable[case]
    assert run.code == 2, run.stderr
    lines = run.stderr.splitlines()
    assert "connected" not in run.stderr
    assert lines[0].startswith("orsgen: connecting to ")
    assert unreachable["closed"] in lines[0]
    # The SDK retries a refused connection 3 times; each wait is said.
    assert lines[1:3] == [
        "orsgen: server not answering yet: connection refused (attempt 1/3); retrying in 1 s",
        "orsgen: server not answering yet: connection refused (attempt 2/3); retrying in 2 s",
    ]
    assert lines[3].startswith("orsgen: error: ") and len(lines) == 4
    assert FAKE_KEY not in run.stderr + run.stdout


def test_counts_are_plural_only_when_plural(orsgen_cli, tmp_path) -> None:
    env = str(ENVS / "split_defaults_env.py")
    run = orsgen_cli([env, "--env-name", "emptytrain", "-o", str(tmp_path / "one")])
    assert run.code == 0, run.stderr
    assert "orsgen: 1 diagnostic:" in run.stderr
    assert "(EmptyTrainEnv, 1 tool, version 1.0.0)" in run.stderr
    assert "Adapter for 'emptytrain': 1 tool." in (tmp_path / "one" / "adapter.py").read_text()
    assert "1 tools" not in run.stderr


def test_plural() -> None:
    from orsgen.wording import plural

    assert [plural(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]


def test_a_file_target_says_it_is_served_before_connecting(orsgen_cli, tmp_path) -> None:
    env_file = ENVS / "split_defaults_env.py"
    run = orsgen_cli([str(env_file), "--env-name", "emptytrain", "-o", str(tmp_path / "served")])
    assert run.code == 0, run.stderr
    lines = run.stderr.splitlines()
    assert lines[0] == f"orsgen: serving {env_file} in this process for the snapshot"
    assert lines[1].startswith("orsgen: connecting to the ORS server at http://127.0.0.1:")


def _many_tools_snapshot(directory, count: int):
    """A stored snapshot of ``count`` tools that each hold a list default (one warning each)."""
    import sys

    from conftest import ROOT
    from orsgen.snapshot.model import build, dump
    from orsgen.snapshot.stored import stored_form

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import generate_scale
    finally:
        sys.path.remove(str(ROOT / "bench"))
    snap = stored_form(generate_scale.snapshot(count))
    for spec in snap["environment"]["tools"]:
        schema = spec["input_schema"]
        schema["properties"]["tags"] = {"type": "array", "items": {"type": "string"}, "default": []}
        spec["property_order"] = [*spec["property_order"], "tags"]
    package = {"class_name": "ScaleEnv", "name": "scale", "split": "train", "version": "1.0.0"}
    directory.mkdir()
    path = directory / "snapshot.json"
    path.write_text(dump(build(snap["environment"], package)), encoding="utf-8")
    return path


MUTABLE = "mutable default is documented, not used as the Python default"


def test_the_same_warning_in_600_tools_is_one_line(orsgen_cli, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # where -o may make the missing directory "many"
    path = _many_tools_snapshot(tmp_path / "src", 600)
    run = orsgen_cli([str(path), "-o", str(tmp_path / "many" / "scale"), "-q"])
    assert run.code == 0, run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) <= 10, run.stderr
    (line,) = [li for li in lines if MUTABLE in li]
    assert "in 600 tools: 'tool_000', 'tool_001', 'tool_002', ... (use --verbose for each)" in line
    assert line.lstrip().startswith("warning at /properties/tags/default: ")


def test_verbose_prints_each_warning_and_fail_on_warning_counts_each(
    orsgen_cli, tmp_path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where -o may make the missing directories
    path = _many_tools_snapshot(tmp_path / "src", 4)
    run = orsgen_cli([str(path), "-o", str(tmp_path / "each" / "scale"), "-q", "--verbose"])
    assert run.code == 0, run.stderr
    each = [li for li in run.stderr.splitlines() if MUTABLE in li]
    assert [li.split("'")[1] for li in each] == [f"tool_00{i}" for i in range(4)]
    run = orsgen_cli([str(path), "-o", str(tmp_path / "refused" / "scale"), "--fail-on-warning"])
    assert run.code == 1
    assert sum(MUTABLE in li for li in run.stderr.splitlines()) == 1  # grouped when shown
    assert "--fail-on-warning and 4 warnings" in run.stderr  # but counted one by one

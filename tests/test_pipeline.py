"""The library entry point (``orsgen.generate.pipeline.run.run``): target -> snapshot -> package section
-> generate -> atomic write, with progress through a callback and nothing printed."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import ECHO_ENV, ROOT
from orsgen.generate.pipeline.checks import live_drift
from orsgen.generate.pipeline.run import Request, RequestError, run, secret_leak
from orsgen.snapshot.model import build, dump

pytestmark = pytest.mark.timeout(180)

GOLDEN = ROOT / "generated" / "echo"
SNAPSHOT = GOLDEN / "snapshot.json"
# The committed package's version, as its snapshot records it (bumped by each regeneration).
GOLDEN_VERSION = json.loads(SNAPSHOT.read_text(encoding="utf-8"))["package"]["version"]


def on_disk(directory: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in directory.iterdir() if p.is_file()}


def test_a_local_env_file_is_served_snapshotted_and_written(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "echo_lib"
    said: list[str] = []
    result = run(Request(str(ECHO_ENV), out), progress=said.append)
    assert result.written and result.refused is None, [d.format() for d in result.diagnostics]
    assert (result.package, result.class_name) == ("echo_lib", "EchoEnv")
    assert (result.version, result.level, result.tool_count) == ("1.0.0", "initial", 2)
    assert on_disk(out) == result.files
    assert json.loads(result.files["snapshot.json"])["package"]["name"] == "echo_lib"
    assert said[0] == f"serving {ECHO_ENV} in this process for the snapshot"
    assert said[1].startswith("connecting to the ORS server at http://127.0.0.1:")
    assert any(m.startswith("connected to echoenv") for m in said)
    # Progress went to the callback only, and nothing else was printed.
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == "", printed
    # The same request, recorded in the snapshot, finds no drift against the live file.
    drift = live_drift(out, result.snapshot)
    assert drift.changes.level == "unchanged", drift.changes.report()
    assert (drift.target.kind, drift.target.value) == ("file", ECHO_ENV.as_posix())


def test_a_stored_snapshot_regenerates_the_golden_package(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "echo"
    said: list[str] = []
    result = run(Request(str(SNAPSHOT), out), progress=said.append)
    # The stored snapshot is the package's previous version: regenerating it changes nothing.
    assert result.written and (result.level, result.version) == ("unchanged", GOLDEN_VERSION)
    assert said == [f"regenerating offline from {SNAPSHOT}"]
    golden = on_disk(GOLDEN)
    assert on_disk(out) == golden == result.files
    again = run(Request(str(out / "snapshot.json"), out))
    assert (again.level, again.version, again.files) == ("unchanged", GOLDEN_VERSION, golden)
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == "", printed


def _with_optional_parameter(tmp_path: Path) -> Path:
    """The golden snapshot, with an optional parameter added to the ``echo`` tool."""
    stored: dict[str, Any] = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    environment = copy.deepcopy(stored["environment"])
    (echo,) = [t for t in environment["tools"] if t["name"] == "echo"]
    echo["input_schema"]["properties"]["repeat"] = {"type": "integer", "default": 1}
    echo["property_order"].append("repeat")
    path = tmp_path / "v2" / "snapshot.json"
    path.parent.mkdir()
    path.write_text(dump(build(environment, stored["package"])), encoding="utf-8")
    return path


def test_regeneration_over_a_package_bumps_its_version(tmp_path: Path) -> None:
    out = tmp_path / "echo"
    shutil.copytree(GOLDEN, out, ignore=shutil.ignore_patterns("__pycache__"))
    said: list[str] = []
    result = run(Request(str(_with_optional_parameter(tmp_path)), out), progress=said.append)
    assert result.written and (result.level, result.version) == ("minor", "1.1.0")
    assert result.changes is not None
    assert "optional parameter 'repeat' added to tool 'echo'" in result.changes.report()
    assert any(m.startswith(f"changes since the previous snapshot in {out}:") for m in said)
    assert (
        "def echo(" in (out / "adapter.py").read_text() and "repeat" in on_disk(out)["adapter.py"]
    )
    changes = (out / "CHANGES.md").read_text()
    assert changes.index("## 1.1.0") < changes.index("## 1.0.0")


def test_a_directory_it_did_not_write_is_never_clobbered(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes\n")
    with pytest.raises(RequestError, match="not a package orsgen generated"):
        run(Request(str(SNAPSHOT), out))
    assert on_disk(out) == {"notes.txt": "my notes\n"}

    # Inside an orsgen package, a generated name without the header is refused at write time.
    package = tmp_path / "echo"
    shutil.copytree(GOLDEN, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "adapter.py").write_text("# my own adapter\n")
    before = on_disk(package)
    with pytest.raises(RequestError, match="adapter.py .*did not write it"):
        run(Request(str(SNAPSHOT), package))
    assert on_disk(package) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["echo", "mine"]  # no staging left


def test_refused_packages_are_returned_not_written(tmp_path: Path) -> None:
    out = tmp_path / "echo"
    leaked = run(Request(str(SNAPSHOT), out, secrets={"T": "Echo a word back"}))
    assert leaked.refused == "secret in snapshot" and not leaked.written
    strict = run(Request(str(SNAPSHOT), tmp_path / "math", fail_on_warning=True))
    assert strict.refused == "warnings" and any("shadows" in d.message for d in strict.diagnostics)
    assert not out.exists() and not (tmp_path / "math").exists()


def test_a_secret_only_in_the_code_is_named_as_such() -> None:
    files = {"snapshot.json": "{}", "adapter.py": "WIRE_NAMES = {}"}
    assert secret_leak(files, ["WIRE_NAMES"]) == "secret in code"
    assert secret_leak(files, ["{}"]) == "secret in snapshot"
    assert secret_leak(files, ["", "absent"]) is None


def test_serving_files_one_after_another_in_one_process_prints_nothing(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Each in-process server gets a fresh stream exit event: the second and later ones
    used to log "bound to a different event loop" tracebacks (the run still succeeded)."""
    for name in ("first", "second", "third"):
        result = run(Request(str(ECHO_ENV), tmp_path / name / "echo"))
        assert result.written and result.tool_count == 2
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == "", printed


def test_a_url_target_is_the_packages_default_and_a_loopback_one_is_said(
    tmp_path: Path, echo_server: Any, orsgen_cli: Any
) -> None:
    """The README and the code agree (issue 16, item 8): a package generated from a URL
    records that server as its default, and a loopback address is pointed out when it
    becomes one, even with -q (it means nothing on another machine)."""
    out = tmp_path / "from_url"
    result = run(Request(echo_server.url, out))
    assert result.written, [d.format() for d in result.diagnostics]
    assert f'DEFAULT_URL: ClassVar[str | None] = "{echo_server.url}"' in result.files["adapter.py"]
    (note,) = result.notes
    assert echo_server.url in note and "loopback" in note and "base_url" in note
    # Not a diagnostic: --fail-on-warning still writes a package that works on this machine.
    assert not any("loopback" in d.message for d in result.diagnostics)
    # Regenerated over itself the default is not new: nothing more to say.
    assert run(Request(echo_server.url, out)).notes == ()

    printed = orsgen_cli([echo_server.url, "-o", str(tmp_path / "quiet_url"), "-q"])
    assert printed.code == 0, printed.stderr
    (line,) = [m for m in printed.stderr.splitlines() if "loopback" in m]
    assert line.startswith("orsgen: warning: ") and echo_server.url in line
    # A file target records no server, so there is nothing to warn about.
    assert run(Request(str(ECHO_ENV), tmp_path / "from_file")).notes == ()

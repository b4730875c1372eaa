"""The stored snapshot is typed (``orsgen/snapshot/stored.py``): loaded once into models,
dumped back byte for byte, and closed to keys format 1 does not define."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from orsgen.canonical import sha256_of
from orsgen.snapshot.model import SnapshotError, build, dump, load_text
from orsgen.snapshot.stored import Snapshot, parse

GOLDENS = [ROOT / "generated" / "echo", ROOT / "generated" / "rich", ROOT / "bench" / "benchenv"]
ECHO = json.loads((ROOT / "generated" / "echo" / "snapshot.json").read_text(encoding="utf-8"))


def test_the_echo_snapshot_reads_as_fields() -> None:
    stored = parse(ECHO)
    environment = stored.environment
    assert [t.name for t in environment.tools] == ["echo"]
    assert environment.tools[0].property_order == ["text", "style"]
    # Newest first: the test split's held-out tasks (4, was 1) were a patch.
    assert [h.version for h in stored.package.history] == ["1.0.1", "1.0.0"]
    assert stored.package.history[0].level == "patch"
    assert environment.terminal_tool is None
    # Every fact the fetcher records is a field, not an extra key.
    assert [(s.name, s.num_tasks) for s in environment.splits] == [("test", 4), ("train", 4)]
    assert environment.task_tools_probe is not None
    assert (environment.task_tools_probe.split, environment.task_tools_probe.indices) == (
        "train",
        [0],
    )
    assert (
        environment.server_version == environment.sdk_version == ECHO["environment"]["sdk_version"]
    )
    assert "text" in environment.message_block_types


@pytest.mark.parametrize("golden", GOLDENS, ids=[g.name for g in GOLDENS])
def test_a_stored_snapshot_dumps_back_to_the_same_bytes(golden) -> None:
    path = golden / "snapshot.json"
    text = path.read_text(encoding="utf-8")
    stored = load_text(text, str(path))
    assert isinstance(stored, Snapshot)
    assert dump(stored) == text
    # Rebuilt from its two sections, the hash is the stored one.
    assert build(stored.environment, stored.package).sha256 == stored.sha256


def test_a_malformed_snapshot_is_refused_naming_the_field() -> None:
    env = json.loads(json.dumps(ECHO["environment"]))
    env["tools"][0]["name"] = 7
    with pytest.raises(SnapshotError, match=r"environment/tools/0/name"):
        build(env, ECHO["package"])
    with pytest.raises(SnapshotError, match=r"environment/tools/0/name"):
        parse({**ECHO, "environment": env})


@pytest.mark.parametrize(
    "where,place",
    [
        (("package",), "package"),
        (("environment",), "environment"),
        (("environment", "identity"), "environment/identity"),
        ((), "the top level"),
    ],
)
def test_an_unknown_key_is_refused_naming_it(where: tuple[str, ...], place: str) -> None:
    data = json.loads(json.dumps(ECHO))
    section = data
    for key in where:
        section = section[key]
    section["added_by_a_newer_orsgen"] = True
    with pytest.raises(SnapshotError) as raised:
        parse(data, "x/snapshot.json")
    message = str(raised.value)
    assert message.startswith("x/snapshot.json: unknown key 'added_by_a_newer_orsgen'")
    assert f"in {place} " in message and "format 1" in message


def test_an_unknown_key_in_a_file_is_refused_when_it_loads() -> None:
    data = json.loads(json.dumps(ECHO))
    data["environment"]["splits"][0]["weight"] = 2
    data["sha256"] = sha256_of(data["environment"])  # a consistent hash: only the key is wrong
    with pytest.raises(SnapshotError, match=r"unknown key 'weight' in environment/splits/0"):
        load_text(json.dumps(data), "snapshot.json")

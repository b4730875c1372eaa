"""The stored snapshot is validated once, into typed models, before anything is generated."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from orsgen.generate import generate
from orsgen.snapshot.model import SnapshotError, build
from orsgen.snapshot.stored import parse

ECHO = json.loads((ROOT / "generated" / "echo" / "snapshot.json").read_text(encoding="utf-8"))


def test_the_echo_snapshot_reads_as_fields() -> None:
    stored = parse(ECHO)
    assert [t.name for t in stored.environment.tools] == ["echo"]
    assert stored.environment.tools[0].property_order == ["text", "style"]
    assert stored.package.history[0].version == "1.0.0"
    assert stored.environment.terminal_tool is None


def test_a_malformed_snapshot_is_refused_naming_the_field() -> None:
    env = json.loads(json.dumps(ECHO["environment"]))
    env["tools"][0]["name"] = 7
    with pytest.raises(SnapshotError, match=r"environment/tools/0/name"):
        parse(build(env, ECHO["package"]))

    result = generate(build(env, ECHO["package"]))
    assert not result.ok and not result.files
    assert "environment/tools/0/name" in result.diagnostics[0].format()


def test_unknown_keys_are_kept_not_refused() -> None:
    package = {**ECHO["package"], "added_by_a_newer_orsgen": True}
    assert parse(build(ECHO["environment"], package)).package.name == "echo"

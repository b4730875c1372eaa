"""Defaults that fit real environments: without --split the package uses
``train``, else the only split, else the first (saying which and why); only a split asked
for by name must exist. A split with no tasks skips the default task-tool probe with a
warning, as TRL's bridge does; a --probe-index out of range stays an error."""

from __future__ import annotations

import json

import pytest

from conftest import ENVS

pytestmark = pytest.mark.timeout(120)

SPLITS_ENV = str(ENVS / "split_defaults_env.py")


def _snapshot(out):
    return json.loads((out / "snapshot.json").read_text())


def test_the_only_split_is_the_default(orsgen_cli, tmp_path) -> None:
    out = tmp_path / "onlytest"
    run = orsgen_cli([SPLITS_ENV, "--env-name", "onlytest", "-o", str(out)])
    assert run.code == 0, run.stderr
    line = [ln for ln in run.stderr.splitlines() if "no --split given" in ln]
    assert line and "no 'train' split: using 'test', the only split" in line[0]
    assert "training on it contaminates later evaluations" in line[0]
    snapshot = _snapshot(out)
    assert snapshot["package"]["split"] == "test"
    assert snapshot["environment"]["task_tools_probe"]["split"] == "test"
    assert [t["name"] for t in snapshot["environment"]["task_tools"]] == ["hint"]  # probed test
    assert 'DEFAULT_SPLIT: ClassVar[str] = "test"' in (out / "adapter.py").read_text()


def test_the_first_split_is_chosen_and_said(orsgen_cli, tmp_path) -> None:
    out = tmp_path / "notrain"
    run = orsgen_cli([SPLITS_ENV, "--env-name", "notrain", "-o", str(out)])
    assert run.code == 0, run.stderr
    line = [ln for ln in run.stderr.splitlines() if "no --split given" in ln]
    assert line and "'validation', the first of 2 splits (validation, test)" in line[0]
    assert "--split" in line[0] and "training on it contaminates later evaluations" in line[0]
    assert _snapshot(out)["package"]["split"] == "validation"


def test_an_explicit_missing_split_is_an_error(orsgen_cli, tmp_path) -> None:
    out = tmp_path / "explicit"
    run = orsgen_cli([SPLITS_ENV, "--env-name", "onlytest", "--split", "train", "-o", str(out)])
    assert run.code == 2
    assert "split 'train' does not exist; splits: test" in run.stderr
    assert not out.exists()


def test_an_empty_split_keeps_the_shared_tools_with_a_warning(orsgen_cli, tmp_path) -> None:
    out = tmp_path / "emptytrain"
    run = orsgen_cli([SPLITS_ENV, "--env-name", "emptytrain", "-o", str(out)])
    assert run.code == 0, run.stderr
    assert "warning: split 'train' has no tasks" in run.stderr
    assert "shared tools only" in run.stderr
    environment = _snapshot(out)["environment"]
    assert [t["name"] for t in environment["tools"]] == ["answer"]
    assert environment["task_tools"] == []
    assert environment["task_tools_probe"]["indices"] == []


def test_an_empty_split_fails_with_fail_on_warning(orsgen_cli, tmp_path) -> None:
    out = tmp_path / "strict"
    run = orsgen_cli([SPLITS_ENV, "--env-name", "emptytrain", "--fail-on-warning", "-o", str(out)])
    assert run.code == 1
    assert not out.exists()


def test_an_explicit_probe_index_out_of_range_stays_an_error(orsgen_cli, tmp_path) -> None:
    out = tmp_path / "probe"
    args = [SPLITS_ENV, "--env-name", "emptytrain", "--probe-index", "0", "-o", str(out)]
    run = orsgen_cli(args)
    assert run.code == 2
    assert "probe index 0 is out of range for split 'train' (0 tasks)" in run.stderr
    assert not out.exists()


def test_choose_split_rules() -> None:
    from orsgen.snapshot.errors import TargetError
    from orsgen.snapshot.splits import choose_split

    assert choose_split(["test", "train"], None) == ("train", None)
    assert choose_split(["test", "train"], None, previous="test") == ("test", None)
    assert choose_split(["a", "b"], "b") == ("b", None)
    name, why = choose_split(["b", "a"], None)
    assert name == "b" and why is not None and "first of 2" in why
    assert "contaminates" not in why  # "b" is no held-out name
    with pytest.raises(TargetError, match="splits: a, b"):
        choose_split(["a", "b"], "train")
    with pytest.raises(TargetError, match="no splits"):
        choose_split([], None)

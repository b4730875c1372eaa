"""Dependencies a user's project can live with (issue 34): pyproject.toml declares ranges, never
one exact version; exact pins live in constraints.txt (development and CI) and, for each
floor, in constraints-floor.txt (scripts/test_floor.sh, run by .ci/run); the SDK's range is
the one orsgen/runtime/transport/sdk_check.py names at run time."""

from __future__ import annotations

import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from conftest import ROOT
from orsgen.runtime.transport import sdk_check


def _requirements() -> dict[str, Requirement]:
    """Every requirement of pyproject.toml, its dependencies and each extra's, by name."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found: dict[str, Requirement] = {}
    for line in [*project["dependencies"], *sum(project["optional-dependencies"].values(), [])]:
        requirement = Requirement(line)
        if canonicalize_name(requirement.name) != "orsgen":  # dev's orsgen[...]
            found[canonicalize_name(requirement.name)] = requirement
    return found


def _pins(name: str) -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line:
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            assert spec.operator == "==", line
            pins[canonicalize_name(requirement.name)] = Version(spec.version)
    return pins


def test_pyproject_declares_no_exact_version() -> None:
    exact = [
        str(r) for r in _requirements().values() for s in r.specifier if s.operator in ("==", "===")
    ]
    assert exact == [], "declare a range; pin in constraints.txt"


def test_openreward_and_trl_are_capped_below_the_release_that_may_break_them() -> None:
    requirements = _requirements()
    assert requirements["openreward"].specifier == f">={sdk_check.FLOOR},<{sdk_check.CEILING}"
    assert any(s.operator == "<" for s in requirements["trl"].specifier)


def test_constraints_pin_versions_inside_the_declared_ranges() -> None:
    requirements = _requirements()
    for file in ("constraints.txt", "constraints-floor.txt"):
        for name, version in _pins(file).items():
            if name in requirements:
                assert requirements[name].specifier.contains(version), (file, name, version)


def test_the_floor_constraints_pin_each_declared_floor() -> None:
    requirements, floor = _requirements(), _pins("constraints-floor.txt")
    for name in ("openreward", "trl"):
        (lower,) = [s for s in requirements[name].specifier if s.operator == ">="]
        assert floor[name] == Version(lower.version), name
    # The CPU build of torch, as in development: a looser torch pulls a CUDA build.
    assert floor["torch"] == _pins("constraints.txt")["torch"]


def test_ci_runs_the_readmes_command_then_the_floor() -> None:
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    tests = [line for line in run.splitlines() if line.startswith("bash scripts/test")]
    assert tests == ["bash scripts/test.sh", "bash scripts/test_floor.sh"], run
    floor = (ROOT / "scripts" / "test_floor.sh").read_text(encoding="utf-8")
    assert "CONSTRAINTS=constraints-floor.txt" in floor
    assert '-m "not slow" tests/test_runtime_*.py' in floor

"""orsgen as a user meets it: installed from its wheel into an empty project of their own,
with no checker configuration of ours. The generated package and orsgen itself must pass
``mypy --strict`` and basedpyright strict there, not only inside this repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ECHO_ENV, ROOT

pytestmark = pytest.mark.timeout(420)

# What the wheel is built from; copied so the build leaves nothing in the checkout.
WHEEL_SOURCES = ("pyproject.toml", "README.md", "orsgen", "templates")


def _build_wheel(tmp: Path) -> Path:
    src = tmp / "src"
    src.mkdir()
    for name in WHEEL_SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    out = tmp / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        + ["-w", str(out), str(src)],
        check=True, capture_output=True, timeout=280,
    )
    return next(out.glob("orsgen-*.whl"))


@pytest.fixture(scope="module")
def user_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """An empty project whose only orsgen is the wheel's, installed into ``site``.

    orsgen's dependencies (openreward, datasets, ...) come from this interpreter's
    site-packages, where this checkout is installed in editable mode; ``site`` comes first
    on the path, and the fixture proves that the wheel's copy is the one that is seen.
    """
    tmp = tmp_path_factory.mktemp("user")
    wheel = _build_wheel(tmp)
    site = tmp / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        check=True, capture_output=True, timeout=280,
    )
    project = tmp / "project"
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MYPY", "PYRIGHT"))}
    env["PYTHONPATH"] = str(site)
    where = subprocess.run(
        [sys.executable, "-c", "import orsgen; print(orsgen.__file__)"],
        cwd=project, env=env, capture_output=True, text=True, check=True, timeout=60,
    )
    assert Path(where.stdout.strip()).is_relative_to(site), where.stdout
    shutil.copy2(ECHO_ENV, project / "echo_env.py")
    gen = subprocess.run(
        [sys.executable, "-m", "orsgen", "echo_env.py", "-o", "generated/echo"],
        cwd=project, env=env, capture_output=True, text=True, timeout=280,
    )
    assert gen.returncode == 0, gen.stdout + gen.stderr
    # Nothing configures the checkers but the user's own choice of pyright's strict mode.
    assert sorted(p.name for p in project.iterdir()) == ["echo_env.py", "generated"]
    return project, env, site / "orsgen"


def test_mypy_strict_passes_in_a_fresh_project(user_project: tuple[Path, dict[str, str], Path]) -> None:
    project, env, installed = user_project
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "generated", str(installed)]
        + ["--python-executable", sys.executable, "-v"],
        cwd=project, env=env, capture_output=True, text=True, timeout=280,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    # The orsgen mypy checked is the wheel's (-v logs each module's path).
    assert f"{installed}/__init__.py" in proc.stderr
    assert f"{ROOT}/orsgen" not in proc.stderr


@pytest.mark.parametrize("target", ["generated", "orsgen"])
def test_basedpyright_strict_passes_in_a_fresh_project(
    user_project: tuple[Path, dict[str, str], Path], target: str
) -> None:
    project, env, installed = user_project
    path = "generated" if target == "generated" else str(installed)
    (project / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "strict"}))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "basedpyright", "--pythonpath", sys.executable, "--verbose", path],
            cwd=project, env=env, capture_output=True, text=True, timeout=280,
        )
    finally:
        (project / "pyrightconfig.json").unlink()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert str(installed.parent) in proc.stdout  # the wheel's site is on its search path

"""orsgen as a user meets it: installed from its wheel into an empty project of their own,
with no checker configuration of ours. The generated package, code of the user's that reads
images from its output, and orsgen itself must pass ``mypy --strict`` and basedpyright
strict there, not only inside this repository: once with Pillow installed, and once without
it (``orsgen[vision]`` is optional, so no type may need Pillow to resolve)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import ECHO_ENV, ROOT

pytestmark = pytest.mark.timeout(600)

# What the wheel is built from; copied so the build leaves nothing in the checkout.
WHEEL_SOURCES = ("pyproject.toml", "README.md", "orsgen", "templates")
TYPECHECK = ROOT / "tests" / "typecheck"


@dataclass(frozen=True)
class Project:
    path: Path
    env: dict[str, str]
    python: str  # the interpreter whose search path both checkers use
    installed: Path  # the wheel's orsgen
    user_files: list[str]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
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
        check=True,
        capture_output=True,
        timeout=280,
    )
    return next(out.glob("orsgen-*.whl"))


def _is_pillow_or_orsgen(name: str) -> bool:
    lower = name.lower()
    return name == "PIL" or lower.startswith(("pillow", "orsgen", "__editable__"))


def _interpreter_without_pillow(tmp: Path) -> str:
    """A venv that sees this interpreter's packages (linked, not copied) except Pillow and
    this checkout's editable orsgen: what a user who did not install ``orsgen[vision]`` has."""
    venv = tmp / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not _is_pillow_or_orsgen(entry.name):
            (Path(purelib) / entry.name).symlink_to(entry)
    return str(python)


@pytest.fixture(scope="module", params=["with-pillow", "without-pillow"])
def user_project(
    request: pytest.FixtureRequest, wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> Project:
    """An empty project whose only orsgen is the wheel's, installed into ``site``.

    orsgen's dependencies (openreward, datasets, ...) come from this interpreter's
    site-packages, where this checkout is installed in editable mode; ``site`` comes first
    on the path, and the fixture proves that the wheel's copy is the one that is seen.
    Without Pillow, they come from a venv that links to everything there but Pillow.
    """
    with_pillow = request.param == "with-pillow"
    tmp = tmp_path_factory.mktemp(request.param)
    python = sys.executable if with_pillow else _interpreter_without_pillow(tmp)
    site = tmp / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=280,
    )
    project = tmp / "project"
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MYPY", "PYRIGHT"))}
    env["PYTHONPATH"] = str(site)
    probe = "import importlib.util as u, orsgen; print(orsgen.__file__, u.find_spec('PIL') is None)"
    where = subprocess.run(
        [python, "-c", probe],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    orsgen_file, no_pil = where.stdout.split()
    assert Path(orsgen_file).is_relative_to(site), where.stdout
    # The checkers take their search path from this interpreter: PIL resolves there or not.
    assert no_pil == str(not with_pillow), where.stdout
    shutil.copy2(ECHO_ENV, project / "echo_env.py")
    gen = subprocess.run(
        [python, "-m", "orsgen", "echo_env.py", "-o", "generated/echo"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert gen.returncode == 0, gen.stdout + gen.stderr
    # User code that reads images from the content lists; with Pillow, narrowing to it too.
    user_files = ["uses_images.py"] + (["pillow_contract.py"] if with_pillow else [])
    for name in user_files:
        shutil.copy2(TYPECHECK / name, project / name)
    # Nothing configures the checkers but the user's own choice of pyright's strict mode.
    assert sorted(p.name for p in project.iterdir()) == sorted(
        ["echo_env.py", "generated", *user_files]
    )
    return Project(project, env, python, site / "orsgen", user_files)


@pytest.mark.slow
def test_mypy_strict_passes_in_a_fresh_project(user_project: Project) -> None:
    p = user_project
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--explicit-package-bases"]
        + ["generated", *p.user_files, str(p.installed), "--python-executable", p.python, "-v"],
        cwd=p.path,
        env=p.env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    # The orsgen mypy checked is the wheel's (-v logs each module's path).
    assert f"{p.installed}/__init__.py" in proc.stderr
    assert f"{ROOT}/orsgen" not in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("target", ["generated", "orsgen"])
def test_basedpyright_strict_passes_in_a_fresh_project(user_project: Project, target: str) -> None:
    p = user_project
    paths = ["generated", *p.user_files] if target == "generated" else [str(p.installed)]
    (p.path / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "strict"}))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "basedpyright", "--pythonpath", p.python, "--verbose", *paths],
            cwd=p.path,
            env=p.env,
            capture_output=True,
            text=True,
            timeout=280,
        )
    finally:
        (p.path / "pyrightconfig.json").unlink()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert str(p.installed.parent) in proc.stdout  # the wheel's site is on its search path

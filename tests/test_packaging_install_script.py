"""scripts/install.sh as a newcomer runs it (the README's own install), then mypy from a
project of theirs outside the repository: the editable orsgen must be visible to the
checker, and the install must say what it is doing while it runs.

The install goes into a fresh virtualenv whose only packages are this interpreter's
(a .pth path entry), offline (PIP_NO_INDEX): everything but orsgen is already satisfied,
so what is tested is orsgen's own editable install, exactly as install.sh words it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # a real install, then mypy

# What a clone holds that install.sh reads; copied so the install leaves the checkout alone.
SOURCES = ("pyproject.toml", "README.md", "constraints.txt", "orsgen", "templates", "scripts")


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, **extra}


def test_install_script_shows_its_steps_and_its_editable_orsgen_type_checks(
    tmp_path: Path,
) -> None:
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "build", "*.egg-info")
            shutil.copytree(ROOT / name, clone / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, clone / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # Sorted after orsgen's own .pth, so the fresh install wins over this interpreter's.
    (site / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    install = subprocess.run(
        ["bash", str(clone / "scripts" / "install.sh")],
        env=_clean_env(PYTHON=str(python), PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0"),
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    lines = install.stdout.splitlines()
    # A line per step before its pip run, and pip's own lines for what it installs.
    steps = [line for line in lines if line.startswith("== ")]
    assert [s.split()[1] for s in steps[1:3]] == ["1/2", "2/2"], install.stdout
    assert any(
        "Successfully installed" in line and "orsgen" in line for line in lines
    ), install.stdout
    assert steps[-1].startswith("== installed in "), install.stdout

    # The user's project, outside the clone: the generated package and code that uses it.
    project = tmp_path / "project"
    shutil.copytree(ROOT / "generated" / "echo", project / "echo")
    (project / "train.py").write_text(
        "from echo import EchoEnv, outcome_reward\n\n"
        'env = EchoEnv(base_url="http://127.0.0.1:1")\n'
        "rewards: list[float | None] = outcome_reward([env])\n"
    )
    where = subprocess.run(
        [str(python), "-c", "import orsgen.runtime.compat as m; print(m.__file__)"],
        cwd=project,
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).resolve().is_relative_to(clone), where.stdout
    mypy = subprocess.run(
        [str(python), "-m", "mypy", "--strict", "--no-incremental", "."],
        cwd=project,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert mypy.returncode == 0, mypy.stdout + mypy.stderr
    assert "Cannot find implementation" not in mypy.stdout

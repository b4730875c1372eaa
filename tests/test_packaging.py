"""Packaging: the wheel ships the templates; the runtime never loads the generator's dependencies."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_wheel_ships_templates_and_console_script(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=280,
    )
    wheel = next(tmp_path.glob("orsgen-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for template in (ROOT / "templates").glob("*.jinja"):
        assert f"orsgen/_templates/{template.name}" in names
    assert "orsgen/eval/run.py" in names  # `orsgen eval`
    assert {"orsgen/view/assets/viewer.js", "orsgen/view/assets/viewer.css"} <= names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "orsgen = orsgen.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_runtime_does_not_import_generator_dependencies() -> None:
    code = (
        "import sys, generated.echo as pkg\n"
        "env = pkg.EchoEnv(base_url='http://127.0.0.1:9')\n"
        "pkg.outcome_reward([env])\n"
        "bad = [m for m in ('jinja2', 'black', 'datamodel_code_generator', 'orsgen.generate', 'orsgen.snapshot') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr


def test_python_dash_m_and_version() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "orsgen", "--version"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("orsgen ")

"""Importing a generated package (its adapter on orsgen/runtime/adapter.py) is light. It loads neither
openreward (whose package import pulls in the server framework) nor datasets; they
load on first use. Measured in a fresh interpreter with ``python -X importtime``;
the time is reported, not asserted (benchmarks are not tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "openreward",
    "datasets",
    "fastapi",
    "uvicorn",
    "aiohttp",
    "torch",
    "transformers",
    "trl",
    "PIL",
)


def _child(code: str, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, *flags, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_generated_package_import_loads_no_heavy_modules() -> None:
    code = (
        "import sys, json; import generated.echo; "
        "from generated.echo import EchoEnv, load_tasks, outcome_reward; "
        "EchoEnv(base_url='http://127.0.0.1:9');"  # constructing does no I/O and no heavy import
        "EchoEnv(base_url='http://127.0.0.1:9', multimodal=True);"  # Pillow loads on the first image
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))"
    )
    child = _child(code)
    assert child.returncode == 0, child.stderr
    assert json.loads(child.stdout) == []


def test_importtime_of_generated_package() -> None:
    child = _child("import generated.echo", "-X", "importtime")
    assert child.returncode == 0, child.stderr
    rows = [
        line.split("|") for line in child.stderr.splitlines() if line.startswith("import time:")
    ]
    cumulative = {r[2].strip(): int(r[1]) for r in rows if len(r) == 3 and r[1].strip().isdigit()}
    assert "generated.echo" in cumulative
    print(
        f"\ngenerated.echo cold import: {cumulative['generated.echo'] / 1e6:.3f} s (target < 0.2 s)"
    )
    assert not any(name.split(".")[0] in HEAVY for name in cumulative)

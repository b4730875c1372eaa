from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

# Tests only ever talk to loopback servers they start themselves.
os.environ.setdefault("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
for var in ("OPENREWARD_API_URL", "OPENREWARD_SESSION_URL", "OPENREWARD_URL", "OPENREWARD_API_KEY"):
    os.environ.pop(var, None)

import ors_server  # noqa: E402

ECHO_ENV = ROOT / "examples" / "echo_env.py"


@pytest.fixture(scope="session")
def echo_server() -> Iterator[ors_server.RunningServer]:
    server = ors_server.start(ECHO_ENV)
    try:
        yield server
    finally:
        server.stop()

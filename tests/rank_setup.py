"""What a rank script of the torchrun tests (curriculum_ranks.py, envs_ranks.py) does first:
the repository and ``examples/`` (and any ``extra`` folders) on ``sys.path``, and no model
hub, package index or update check."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def offline(*extra: Path) -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "examples"), *map(str, extra)]
    for key, value in {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRL_EXPERIMENTAL_SILENCE": "1",
        "OPENREWARD_DISABLE_UPDATE_CHECK": "1",
    }.items():
        os.environ.setdefault(key, value)

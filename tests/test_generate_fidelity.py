"""Quality floor: the model sees >= 99% of the schema facts of the SDK's toolsets."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_orsgen_fidelity_on_sdk_toolsets_beats_trl_and_floor() -> None:
    spec = importlib.util.spec_from_file_location("bench_fidelity", ROOT / "bench" / "fidelity.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = module.measure()
    assert report["tools"] >= 50
    assert report["orsgen"]["tools_bound"] == report["tools"]
    assert report["orsgen"]["fidelity"] >= 0.99, module.table(report)
    assert report["orsgen"]["fidelity"] > report["trl"]["fidelity"], module.table(report)
    for category in ("enum", "items_type", "nullable", "nested_field"):
        seen = report["orsgen"]["categories"][category]
        assert seen["seen"] == seen["total"], (category, module.table(report))

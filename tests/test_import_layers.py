"""The generator is pure: importing it loads no network code (and the runtime loads none
of the generator's dependencies)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

NETWORK = ["aiohttp", "openreward", "orsgen.snapshot.fetch", "orsgen.runtime.loop"]
NETWORK += ["orsgen.runtime.connection"]
GENERATOR = ["jinja2", "black", "datamodel_code_generator", "orsgen.generate"]
# The typed snapshot models: the drift guard compares hashes of snapshot.json as JSON.
GENERATOR += ["orsgen.snapshot.stored", "orsgen.snapshot.model"]


def _loaded_after(statement: str, names: list[str]) -> list[str]:
    report = f"print(json.dumps([n for n in {names!r} if n in sys.modules]))"
    code = f"import sys, json\n{statement}\n{report}"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout))


@pytest.mark.parametrize("module", ["orsgen.generate", "orsgen.snapshot.model", "orsgen.canonical"])
def test_the_generator_loads_no_network_code(module: str) -> None:
    assert _loaded_after(f"import {module}", NETWORK) == []


def test_the_drift_guard_loads_none_of_the_generator() -> None:
    assert _loaded_after("import orsgen.runtime.drift", GENERATOR) == []

"""The generator is pure: importing it loads no network code (and the runtime loads none
of the generator's dependencies)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

NETWORK = ["aiohttp", "openreward", "orsgen.snapshot.fetch", "orsgen.runtime.loop"]
NETWORK += [
    "orsgen.runtime.sdk",
    "orsgen.runtime.http",
    "orsgen.runtime.health",
    "orsgen.runtime.pool",
]
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


RUNTIME = Path(__file__).resolve().parents[1] / "orsgen" / "runtime"


def _imported_modules(tree: ast.AST) -> set[str]:
    """Every module a file imports anywhere: top level, under TYPE_CHECKING, in functions,
    and through ``importlib.import_module("...")`` with a literal name."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return found


def runtime_imports(root: Path = RUNTIME) -> dict[str, set[str]]:
    """The runtime's import graph: module name -> every module it imports."""
    return {
        f"orsgen.runtime.{path.stem}": _imported_modules(
            ast.parse(path.read_text(encoding="utf-8"))
        )
        for path in sorted(root.glob("*.py"))
        if path.stem != "__init__"
    }


def runtime_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle among the runtime's modules (as a path that ends where it began),
    or ``[]``."""
    edges = {name: sorted(graph[name] & set(graph)) for name in graph}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> list[str]:
        state[name] = 1
        path.append(name)
        for dep in edges[name]:
            if state.get(dep) == 1:
                return path[path.index(dep) :] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        path.pop()
        state[name] = 2
        return []

    for name in sorted(edges):
        if name not in state:
            found = visit(name)
            if found:
                return found
    return []


def test_the_runtime_has_no_import_cycle() -> None:
    """Counting imports under TYPE_CHECKING and inside functions: lower modules never know
    higher ones."""
    graph = runtime_imports()
    assert "orsgen.runtime.adapter" in graph and len(graph) > 10
    assert runtime_cycle(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c", "x"}, "c": {"a"}, "d": {"a"}}
    assert runtime_cycle(graph) == ["a", "b", "c", "a"]
    assert runtime_cycle({"a": {"b"}, "b": set()}) == []


def _private_openreward(modules: set[str]) -> set[str]:
    return {
        m
        for m in modules
        if m.split(".")[0] == "openreward" and any(part.startswith("_") for part in m.split("."))
    }


def test_one_runtime_module_touches_private_openreward_modules() -> None:
    users = {name: _private_openreward(mods) for name, mods in runtime_imports().items()}
    users = {name: mods for name, mods in users.items() if mods}
    assert set(users) == {"orsgen.runtime.sdk"}, users

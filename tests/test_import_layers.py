"""The generator is pure: importing it loads no network code (and the runtime loads none
of the generator's dependencies)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

NETWORK = ["aiohttp", "openreward", "orsgen.snapshot.fetch", "orsgen.runtime.transport.loop"]
NETWORK += [
    "orsgen.runtime.transport.sdk",
    "orsgen.runtime.transport.http",
    "orsgen.runtime.transport.health",
    "orsgen.runtime.sessions.pool",
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
    assert _loaded_after("import orsgen.runtime.sessions.drift", GENERATOR) == []


def test_replays_comparison_and_the_verdict_rules_load_no_evaluation_code() -> None:
    # orsgen.replay imports nothing itself; its pure compare and summary modules, and the
    # one owner of "passes", "changed" and "flip", load neither orsgen.eval nor the replay.
    statement = "import orsgen.replay.compare, orsgen.replay.summary, orsgen.verdict"
    assert _loaded_after(statement, ["orsgen.eval", "orsgen.replay.run"]) == []


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


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["orsgen.runtime", *parts])


def runtime_imports(root: Path = RUNTIME) -> dict[str, set[str]]:
    """The runtime's import graph, sub-packages included: module name -> every module it
    imports (a package's ``__init__`` is the package's own name)."""
    return {
        _module_name(path, root): _imported_modules(ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(root.rglob("*.py"))
        if _module_name(path, root) != "orsgen.runtime"
    }


# The runtime's layers, lowest first. A module imports only from its own package or lower
# layers: the foundation (pure modules every layer may use), transport, sessions, the
# rollout's records, then three rooms side by side that never import each other (choosing
# tasks, the trajectory log, the upload), the rollout that drives them, and the adapter's
# top level.
FOUNDATION = {"errors", "images", "compat", "validate"}
LAYERS: list[set[str]] = [
    {"foundation"},
    {"transport"},
    {"sessions"},
    {"records"},
    {"choosing", "trajectories", "upload"},
    {"rollouts"},
    {"top"},
]
PACKAGES = set().union(*LAYERS) - {"foundation", "top"}


def layer_of(module: str) -> str:
    """The room of a runtime module (``orsgen.runtime.<name>`` or a sub-package's)."""
    parts = module.split(".")[2:]
    if parts and parts[0] in PACKAGES:
        return parts[0]
    return "foundation" if parts and parts[0] in FOUNDATION else "top"


def _rank(room: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if room in layer)


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a higher layer's module or of a side room's, as
    ``"importer -> imported"``."""
    found: list[str] = []
    for name, imported in sorted(graph.items()):
        for target in sorted(imported & set(graph)):
            mine, theirs = layer_of(name), layer_of(target)
            if _rank(theirs) > _rank(mine) or (_rank(theirs) == _rank(mine) and theirs != mine):
                found.append(f"{name} -> {target}")
    return found


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


def test_the_runtime_layers_import_only_downwards() -> None:
    """transport below sessions below records below the rooms (choosing, trajectories,
    upload) below rollouts below the adapter (the top level)."""
    graph = runtime_imports()
    for package in sorted(PACKAGES):
        assert any(layer_of(name) == package for name in graph), package
    assert layer_violations(graph) == []


def test_the_layer_check_finds_an_upward_import() -> None:
    graph = {
        "orsgen.runtime.transport.sdk": {"orsgen.runtime.sessions.pool", "orsgen.runtime.errors"},
        "orsgen.runtime.sessions.pool": {"orsgen.runtime.transport.sdk"},
        "orsgen.runtime.errors": set(),
        "orsgen.runtime.adapter": {"orsgen.runtime.sessions.pool"},
    }
    assert layer_violations(graph) == [
        "orsgen.runtime.transport.sdk -> orsgen.runtime.sessions.pool"
    ]


def test_the_layer_check_finds_an_import_between_side_rooms() -> None:
    graph = {
        "orsgen.runtime.choosing.tasks": {"orsgen.runtime.upload.record"},
        "orsgen.runtime.upload.record": {"orsgen.runtime.records.episode"},
        "orsgen.runtime.records.episode": set(),
        "orsgen.runtime.rollouts.rollout": {"orsgen.runtime.choosing.tasks"},
    }
    assert layer_violations(graph) == [
        "orsgen.runtime.choosing.tasks -> orsgen.runtime.upload.record"
    ]


ORSGEN = RUNTIME.parent


def test_no_module_is_over_400_lines_and_no_folder_holds_over_15() -> None:
    """Anywhere in orsgen/: a module a reader takes in whole, a folder list one can scan."""
    long = {
        str(path.relative_to(ORSGEN)): n
        for path in ORSGEN.rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert long == {}
    crowded = {
        str(folder.relative_to(ORSGEN)): n
        for folder in [ORSGEN, *(p for p in ORSGEN.rglob("*") if p.is_dir())]
        if (n := len(list(folder.glob("*.py")))) > 15
    }
    assert crowded == {}


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


ORSGEN = RUNTIME.parent


def _orsgen_trees() -> dict[str, ast.AST]:
    """Every module of orsgen/ (by its path under orsgen/), parsed."""
    return {
        str(path.relative_to(ORSGEN)): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(ORSGEN.rglob("*.py"))
    }


def test_one_orsgen_module_touches_private_openreward_modules() -> None:
    """transport/sdk.py alone names a private SDK module (by import, or by name through
    importlib), and it names only the session internals and the environments client."""
    trees = _orsgen_trees()
    assert len(trees) > 50
    users = {name: _private_openreward(_imported_modules(tree)) for name, tree in trees.items()}
    users = {name: mods for name, mods in users.items() if mods}
    assert set(users) == {"runtime/transport/sdk.py"}, users
    named = {m for m in _imported_modules(trees["runtime/transport/sdk.py"]) if "openreward" in m}
    allowed = ("openreward.api._session", "openreward.api.environments.client")
    assert {m for m in named if not m.startswith(allowed)} == set()


def _computed_sdk_imports(tree: ast.AST) -> list[str]:
    """``importlib.import_module("openreward...")``: a plain import works there, and the
    import-layer checks read plain imports."""
    return [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "import_module"
        and node.args
        and "openreward" in ast.unparse(node.args[0])
    ]


def test_no_orsgen_module_imports_the_sdk_by_computed_name() -> None:
    found = {name: _computed_sdk_imports(tree) for name, tree in _orsgen_trees().items()}
    assert {name: calls for name, calls in found.items() if calls} == {}


def _routes(tree: ast.AST) -> list[str]:
    """String literals (docstrings aside) that spell a platform API route, ``/v1/...``."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and "/v1/" in node.value
        and id(node) not in docstrings
    ]


def test_no_platform_route_is_spelled_in_orsgen() -> None:
    """Routes are the SDK's to know: orsgen calls its clients."""
    found = {name: _routes(tree) for name, tree in _orsgen_trees().items()}
    assert {name: routes for name, routes in found.items() if routes} == {}


def test_the_scans_find_what_they_look_for() -> None:
    sample = ast.parse(
        "import importlib\n"
        "from openreward._version import USER_AGENT\n"
        'importlib.import_module("openreward.api.rollouts.background")\n'
        'URL = f"/v1/environments/{x}"\n'
        'def f():\n    """Posts to /v1/rollouts."""\n    return "/v1/rollouts"\n'
    )
    assert _private_openreward(_imported_modules(sample)) == {
        "openreward._version",
        "openreward._version.USER_AGENT",
    }
    assert _computed_sdk_imports(sample) == [
        "importlib.import_module('openreward.api.rollouts.background')"
    ]
    assert sorted(_routes(sample)) == ["/v1/environments/", "/v1/rollouts"]


def _private_reads(tree: ast.AST) -> set[str]:
    """``x._name`` (or ``getattr(x, "_name", ...)``) where ``x`` is not ``self`` or ``cls``
    (dunders aside)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and node.args[1].value.startswith("_")
            and not node.args[1].value.startswith("__")
        ):
            found.add(f"getattr({ast.unparse(node.args[0])}, {node.args[1].value!r})")
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            found.add(f"{ast.unparse(node.value)}.{node.attr}")
    return found


# Objects that are not the runtime's: the SDK's private API (sdk.py alone, see above), the
# stack frame the generated methods' _fail reads, namedtuple's public _replace, and the
# start arguments of AsyncGRPO's rollout process (trainer_facts.py alone reads them).
FOREIGN_PRIVATE = {"sys._getframe", "parsed._replace"}
FOREIGN_PRIVATE |= {f"getattr(process, {name!r})" for name in ("_target", "_args", "_kwargs")}


def test_no_runtime_module_reads_another_objects_private_attribute() -> None:
    reads = {
        str(path.relative_to(RUNTIME)): sorted(
            _private_reads(ast.parse(path.read_text(encoding="utf-8")))
        )
        for path in sorted(RUNTIME.rglob("*.py"))
        if path.name != "sdk.py"
    }
    reads = {name: [r for r in found if r not in FOREIGN_PRIVATE] for name, found in reads.items()}
    assert {name: found for name, found in reads.items() if found} == {}


def test_only_trainer_facts_reads_a_private_name_by_getattr() -> None:
    """``getattr(x, "_name")`` anywhere in orsgen/ (the generator and eval too): only the
    documented TRL fence, trainer_facts.py, reads another object's private name so."""
    found = {
        str(path.relative_to(ORSGEN)): sorted(
            read
            for read in _private_reads(ast.parse(path.read_text(encoding="utf-8")))
            if read.startswith("getattr(")
        )
        for path in sorted(ORSGEN.rglob("*.py"))
    }
    assert {name for name, reads in found.items() if reads} == {"runtime/records/trainer_facts.py"}


def test_no_module_imports_the_package_root() -> None:
    """``orsgen/__init__.py`` is the top: the public namespace, which imports every layer
    lazily. A module under it that imported it (for ``__version__``, say, which
    ``orsgen/_version.py`` holds) would be an arrow running back up."""
    trees = _orsgen_trees()
    upward = [name for name, tree in trees.items() if "orsgen" in _imported_modules(tree)]
    assert upward == []
    assert _imported_modules(trees["_version.py"]) == set()  # a leaf

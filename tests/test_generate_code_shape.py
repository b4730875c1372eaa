"""Generated code as a reader and a type checker see it: a client-side failure names its
tool's wire name as a literal (no stack introspection at run time), nothing returns the
value of a ``NoReturn`` call, no ``# type: ignore`` goes without a code and a reason, and
``WIRE_NAMES`` lists only the parameter names that differ from the wire. Checked on the
committed packages and on one generated here from names built to trip each rule."""

from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from conftest import ROOT, import_generated
from orsgen.generate import generate
from orsgen.snapshot.model import build, load_text
from orsgen.snapshot.stored import stored_form
from orsgen.generate.pipeline.write import write_package
from wire_map import wire_params

GOLDENS = [ROOT / "generated" / "echo", ROOT / "generated" / "rich", ROOT / "bench" / "benchenv"]

# A wire name that needs escaping, on a tool whose nested argument is validated client-side
# (so its method calls ``_fail``); nested fields that are omittable but never null, one of
# them under an alias (``max-n``), which models.py once marked ``# type: ignore``.
ODD_WIRE = "say \"hi\"\n'there'\\"
_OPTIONS = {
    "type": "object",
    "properties": {
        "mode": {"enum": ["r", "w"]},
        "max-n": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["mode"],
}
ODD_TOOLS = [
    {
        "name": ODD_WIRE,
        "description": "Odd name.",
        "input_schema": {
            "type": "object",
            "properties": {"opts": _OPTIONS, "from": {"type": "string"}},
            "required": ["opts"],
        },
    },
    {
        "name": "plain",
        "description": "Plain names.",
        "input_schema": {
            "type": "object",
            "properties": {"opts": _OPTIONS, "text": {"type": "string"}},
            "required": ["text"],
        },
    },
]


@pytest.fixture(scope="module")
def odd_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    environment = {"identity": {"env_name": "odd"}, "tools": ODD_TOOLS, "task_tools": []}
    snapshot = build(environment, {"name": "odd_shapes", "class_name": "OddEnv"})
    result = generate(snapshot)
    assert result.ok, result.diagnostics
    out = tmp_path_factory.mktemp("shapes") / "odd_shapes"
    write_package(out, result.files)
    return out


PACKAGES = [*GOLDENS, "odd"]


def _directory(which: Path | str, odd_package: Path) -> Path:
    return odd_package if which == "odd" else Path(which)


def _ids(which: Path | str) -> str:
    return which if isinstance(which, str) else which.name


def _adapter_class(directory: Path) -> ast.ClassDef:
    tree = ast.parse((directory / "adapter.py").read_text(encoding="utf-8"))
    return next(n for n in tree.body if isinstance(n, ast.ClassDef))


def _wire_names(cls: ast.ClassDef) -> dict[str, tuple[str, dict[str, str]]]:
    """``WIRE_NAMES`` as the source spells it (a literal, so read without running it)."""
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and ast.unparse(stmt.target) == "WIRE_NAMES":
            assert stmt.value is not None
            value: dict[str, tuple[str, dict[str, str]]] = ast.literal_eval(stmt.value)
            return value
    raise AssertionError("no WIRE_NAMES in the adapter class")


def _fail_calls(node: ast.AST) -> list[ast.Call]:
    return [
        c
        for c in ast.walk(node)
        if isinstance(c, ast.Call)
        and isinstance(c.func, ast.Attribute)
        and c.func.attr == "_fail"
        and isinstance(c.func.value, ast.Name)
        and c.func.value.id == "self"
    ]


def test_every_failure_passes_its_tool_wire_name_as_a_literal(odd_package: Path) -> None:
    seen: dict[str, int] = {}
    for which in PACKAGES:
        cls = _adapter_class(_directory(which, odd_package))
        wire_names = _wire_names(cls)
        for method in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
            for call in _fail_calls(method):
                first = call.args[0] if call.args else None
                assert isinstance(first, ast.Constant), ast.unparse(call)
                assert first.value == wire_names[method.name][0], (which, method.name)
                assert len(call.args) == 2 and not call.keywords, ast.unparse(call)
                seen[wire_names[method.name][0]] = seen.get(wire_names[method.name][0], 0) + 1
    # The rich golden validates two tools client-side; the odd one's wire name needs escaping.
    assert {"import", "search", ODD_WIRE, "plain"} <= set(seen), seen


@pytest.mark.parametrize("which", PACKAGES, ids=_ids)
def test_nothing_returns_the_value_of_a_noreturn_call(which: Path | str, odd_package: Path) -> None:
    cls = _adapter_class(_directory(which, odd_package))
    returned = [
        ast.unparse(r)
        for r in ast.walk(cls)
        if isinstance(r, ast.Return) and r.value is not None and _fail_calls(r.value)
    ]
    assert returned == []


# ``# type: ignore[code]  reason`` (or pyright's ``ignore[rule]``) is the only form allowed.
_IGNORE = re.compile(r"(type|pyright):\s*ignore")
_EXPLAINED = re.compile(r"(type|pyright):\s*ignore\[[\w\-, ]+\]\s*(#\s*)?\S.*")


@pytest.mark.parametrize("which", PACKAGES, ids=_ids)
def test_no_type_ignore_goes_without_a_code_and_a_reason(
    which: Path | str, odd_package: Path
) -> None:
    directory = _directory(which, odd_package)
    bare = []
    for path in sorted(directory.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT and _IGNORE.search(token.string):
                if not _EXPLAINED.search(token.string):
                    bare.append(f"{path.name}:{token.start[0]}: {token.string}")
    assert bare == []


def test_omittable_fields_keep_their_type_and_refuse_null(odd_package: Path) -> None:
    """What the ignore once covered: a field that may be left out but not sent as null
    keeps its own type (``list[str]``, not ``list[str] | None``)."""
    assert "Field(None" not in (odd_package / "models.py").read_text(encoding="utf-8")
    opts = import_generated(odd_package).models.Opts
    assert opts.model_fields["tags"].annotation == list[str]
    assert opts.model_fields["max_n"].annotation is int
    opts.model_validate({"mode": "r"})  # both left out
    opts.model_validate({"mode": "r", "max-n": 3, "tags": ["a"]})
    for null in ({"mode": "r", "tags": None}, {"mode": "r", "max-n": None}):
        with pytest.raises(ValidationError):
            opts.model_validate(null)


@pytest.mark.slow  # two type-checker runs
def test_the_odd_package_is_strict_clean(odd_package: Path) -> None:
    """mypy --strict and basedpyright strict, as on the goldens, here with an aliased
    omittable field and a wire name that needs escaping."""
    env = {**os.environ, "MYPYPATH": str(odd_package.parent)}
    checks = {
        "mypy": [sys.executable, "-m", "mypy", "--strict", "-p", "odd_shapes"],
        "basedpyright": [sys.executable, "-m", "basedpyright", "--pythonpath", sys.executable]
        + [str(odd_package)],
    }
    for name, command in checks.items():
        proc = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=220
        )
        assert proc.returncode == 0, (name, proc.stdout + proc.stderr)


def _classes(odd_package: Path) -> list[tuple[Any, Path]]:
    import bench.benchenv
    import generated.echo
    import generated.rich

    odd = import_generated(odd_package).OddEnv
    classes = [generated.echo.EchoEnv, generated.rich.RichEnv, bench.benchenv.BenchEnv]
    return [*zip(classes, GOLDENS), (odd, odd_package)]


def test_wire_names_list_only_the_names_that_differ(odd_package: Path) -> None:
    listed: dict[str, dict[str, str]] = {}
    for cls, directory in _classes(odd_package):
        environment = stored_form(load_text((directory / "snapshot.json").read_text(), "s"))
        specs = environment["environment"]
        schemas = {t["name"]: t["input_schema"] for t in [*specs["tools"], *specs["task_tools"]]}
        for method, (wire, differing) in cls.WIRE_NAMES.items():
            assert all(py != w for py, w in differing.items()), (cls.__name__, method, differing)
            listed.update({f"{cls.__name__}.{method}": dict(differing)} if differing else {})
            # Every Python name still maps back: to its listed wire name, or to itself; and
            # together they are exactly the schema's parameters.
            properties = set((schemas[wire] or {}).get("properties", {}))
            assert set(wire_params(cls, method).values()) == properties, (cls.__name__, method)
    assert listed == {
        "RichEnv.open_doc": {"page_size_2": "page-size"},
        "RichEnv.search": {"in_": "in", "max_results": "max-results"},
        "OddEnv.say_hi_there": {"from_": "from"},
    }

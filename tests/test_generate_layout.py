"""``layout.format_module`` (black one method shape at a time) writes exactly what black
writes for the whole module, for the goldens and for methods built to trip it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from orsgen.generate import generate, layout
from orsgen.snapshot.model import build, load_text

GOLDENS = [ROOT / "generated" / "echo", ROOT / "generated" / "rich", ROOT / "bench" / "benchenv"]


def _whole(monkeypatch: pytest.MonkeyPatch, snapshot: Any) -> dict[str, str]:
    with monkeypatch.context() as m:
        m.setattr(layout, "format_module", lambda source, black: black(source))
        result = generate(snapshot)
    assert result.ok, result.diagnostics
    return result.files


def _tool(name: str, description: str, **props: Any) -> dict[str, Any]:
    properties = props or {"x": {"type": "integer"}}
    return {
        "name": name,
        "description": description,
        "input_schema": {"type": "object", "properties": properties, "required": ["x"]},
    }


LONG = "y" * 70
TRICKY = [
    _tool("plain", "One line."),
    _tool("plain2", "One line."),  # the same shape as plain: one black run for both
    _tool("quotes", 'Says "hi" and \'bye\'; ends with a quote"'),
    _tool("backslash", "A path C:\\temp\\new and a tab\there."),
    _tool("it's", "A wire name black quotes another way."),
    _tool("unicode", "Ünïcödé — 漢字 width counts."),
    _tool("long_" + "n" * 60, "A name long enough to split the call " + "w " * 30),
    _tool("wrapped", "A docstring line " + "z" * 90 + "\n\n    indented\ttabs  \ntrailing   "),
    _tool(
        "many",
        "",
        x={"type": "integer"},
        **{f"p{i}": {"type": "string", "default": LONG} for i in range(4)},
    ),
    _tool("w" * 8, 'The wire name is its own placeholder: "wwwwwwww".'),
    # Validated client-side: the wire name is in ``_fail`` too.
    _tool("nested-a", "Nested.", x={"type": "object", "properties": {"k": {"type": "integer"}}}),
    _tool("nested-b", "Nested.", x={"type": "object", "properties": {"k": {"type": "integer"}}}),
    _tool("it's nested", "", x={"type": "object", "properties": {"k": {"type": "integer"}}}),
]


@pytest.mark.parametrize("package", GOLDENS, ids=[p.name for p in GOLDENS])
def test_goldens_are_black_on_the_whole_module(monkeypatch, package: Path) -> None:
    snapshot = load_text((package / "snapshot.json").read_text(encoding="utf-8"), "snapshot")
    assert generate(snapshot).files == _whole(monkeypatch, snapshot)


def test_tricky_methods_are_black_on_the_whole_module(monkeypatch) -> None:
    environment = {"identity": {"env_name": "tricky"}, "tools": TRICKY, "task_tools": []}
    snapshot = build(environment, {"name": "tricky", "class_name": "TrickyEnv"})
    files = generate(snapshot).files
    assert files["adapter.py"] == _whole(monkeypatch, snapshot)["adapter.py"]
    assert "def long_" + "n" * 60 + "(self, x: int) -> _Content:" not in files["adapter.py"]


# One method body per case, ``{i}`` its number: a plain call, and a method that validates
# client-side, which names its wire name twice (``_fail`` and ``_call``), both stubbed.
BODIES = {
    "plain": "        return self._call('tool_{i}', {{'x': x}})\n",
    "validating": (
        "        _problem = _check(x)\n"
        "        if _problem is not None:\n"
        "            self._fail('wire-{i}', _problem)\n"
        "        return self._call('wire-{i}', {{'x': x}})\n"
    ),
}


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_methods_of_one_shape_go_through_black_once(body: str) -> None:
    from orsgen.generate.render import format_python

    methods = "".join(
        f"\n    def tool_{i:03d}(self, x: int) -> int:\n"
        f'        """Tool {i}."""\n' + body.format(i=f"{i:03d}")
        for i in range(30)
    )
    source = f"class A:\n    N: int = 1\n{methods}"
    seen: list[str] = []

    def black(text: str) -> str:
        seen.append(text)
        return format_python(text)

    out = layout.format_module(source, black)
    assert out == format_python(source)
    assert sum("_call(" in text for text in seen) == 1
    # Each method got its own wire name back, in every place it had it.
    assert out.count('"tool_007"') + out.count('"wire-007"') == body.count("{i}")

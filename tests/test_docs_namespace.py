"""One public namespace (issue 28): ``from orsgen import ...`` gives every name a user needs,
``orsgen.__all__`` lists exactly those, lazily, and the docs agree with it both ways: a name
the docs, the README or the examples import is public, and a public name is documented."""

from __future__ import annotations

import ast
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import docs_blocks
from conftest import ROOT

# Pages for users; docs/internals.md is for contributors and may name internal modules.
USER_PAGES = [p for p in docs_blocks.pages() if p.name != "internals.md"]
API_PAGE = Path("docs/reference/api.md")


def _imports(source: str) -> list[tuple[str, str | None]]:
    """(module, name) of every import of orsgen in ``source``; name None for ``import x``
    (a block that does not parse as a whole still has its import lines read)."""
    found: list[tuple[str, str | None]] = []
    for node in docs_blocks.imports(source):
        if isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] == "orsgen":
                found += [(str(node.module), alias.name) for alias in node.names]
        else:
            found += [(a.name, None) for a in node.names if a.name.split(".")[0] == "orsgen"]
    return found


def test_all_is_exactly_the_public_table_and_every_name_resolves() -> None:
    import orsgen

    assert orsgen.__all__ == sorted(orsgen._PUBLIC), "spell __all__ as _PUBLIC's sorted keys"
    for name in orsgen.__all__:
        value = getattr(orsgen, name)
        module = orsgen._PUBLIC[name]
        assert value is getattr(sys.modules[module], name), name
    assert set(dir(orsgen)) >= set(orsgen.__all__)


def test_a_name_that_is_not_public_is_an_attribute_error() -> None:
    import orsgen

    try:
        orsgen.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("orsgen.no_such_name resolved")


def test_import_orsgen_loads_none_of_what_the_names_need() -> None:
    """Lazy: the namespace costs what `import orsgen` cost before it existed."""
    probe = (
        "import sys, orsgen; "
        "print(__import__('json').dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('orsgen', 'openreward', 'datasets', 'transformers', 'openai', 'torch', 'trl'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) == ["orsgen", "orsgen._version"], out  # the version: a leaf


def test_the_docs_readme_and_examples_import_only_public_names() -> None:
    import orsgen

    sources: list[tuple[str, str]] = []
    for block in docs_blocks.all_blocks():
        if block.is_python:
            sources.append((block.id, block.code))
    for example in sorted((ROOT / "examples").glob("*.py")):
        sources.append((str(example.relative_to(ROOT)), example.read_text(encoding="utf-8")))
    wrong = []
    for where, source in sources:
        for module, name in _imports(source):
            if module != "orsgen" or name not in orsgen.__all__:
                wrong.append(f"{where}: {module}{'.' + name if name else ''}")
    assert wrong == [], "import these from `orsgen` (or make them public):\n" + "\n".join(wrong)


def test_user_pages_name_public_names_by_their_public_path() -> None:
    """`orsgen.runtime.choosing.checkpoint.CurriculumCheckpoint` in a user page is `orsgen.CurriculumCheckpoint`."""
    import orsgen

    wrong = []
    for page in USER_PAGES:
        text = (ROOT / page).read_text(encoding="utf-8")
        for dotted in re.findall(r"\borsgen(?:\.[a-z_]+)+\.([A-Za-z_]\w*)", text):
            if dotted in orsgen.__all__:
                wrong.append(f"{page}: {dotted}")
    assert wrong == [], wrong


def test_every_public_name_is_documented() -> None:
    """A docstring for the API reference, and a mention on a page a user reads."""
    import orsgen

    text = "\n".join((ROOT / p).read_text(encoding="utf-8") for p in USER_PAGES if p != API_PAGE)
    undocumented = []
    for name in orsgen.__all__:
        value = getattr(orsgen, name)
        if (inspect.isclass(value) or inspect.isfunction(value)) and not inspect.getdoc(value):
            undocumented.append(f"{name}: no docstring")
        if not re.search(
            rf"`[^`\n]*\b{re.escape(name)}\b[^`\n]*`|^.*\b{re.escape(name)}\b.*$", text, re.M
        ):
            undocumented.append(f"{name}: on no page")
    assert undocumented == [], undocumented


def test_the_api_reference_renders_exactly_the_public_names() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import docs_hooks
    import orsgen

    page = docs_hooks.api_reference()
    rendered = set(re.findall(r"^::: orsgen\.(\w+)$", page, re.M))
    rendered |= set(re.findall(r"^### `(\w+)`$", page, re.M))
    assert rendered == set(orsgen.__all__)
    assert "<!-- api-reference -->" in (ROOT / API_PAGE).read_text(encoding="utf-8")

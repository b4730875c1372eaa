"""The documentation site builds with ``mkdocs build --strict`` (issue 28): no broken link or
anchor, no page missing from the nav, no warning from mkdocstrings; the CLI reference lists
every command and the API reference every public name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        import material  # noqa: F401  (the theme)
        import mkdocs  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError as exc:  # a missing extra is a broken install, not a reason to skip
        pytest.fail(f"{exc}: install the docs extra: pip install -e '.[docs]' -c constraints.txt")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    assert "WARNING" not in built.stderr, built.stderr[-4000:]
    return out


@pytest.mark.slow  # the mkdocs build
def test_the_site_builds_strictly(site: Path) -> None:
    for page in ("index.html", "getting-started/index.html", "reference/api/index.html"):
        assert (site / page).is_file(), page


@pytest.mark.slow  # the mkdocs build
def test_the_cli_reference_has_every_command(site: Path) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import docs_hooks

    html = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    names = [c.words for c in docs_hooks.commands()]
    assert names[:3] == ["orsgen", "orsgen check", "orsgen eval"], names
    for command in docs_hooks.commands():
        assert f"<code>{command.words}</code>" in html, command.words
        for action in command.build()._actions:
            for option in action.option_strings:
                assert option in html, (command.words, option)


@pytest.mark.slow  # the mkdocs build
def test_the_api_reference_has_every_public_name(site: Path) -> None:
    import orsgen

    html = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    for name in orsgen.__all__:
        assert f'id="orsgen.{name}"' in html or f"<code>{name}</code>" in html, name


def test_orsgen_help_lists_every_command() -> None:
    """`orsgen --help` names every subcommand `orsgen.cli.main` dispatches (issue 28)."""
    from orsgen import cli

    shown = cli.generate_parser().format_help()
    commands = cli.COMMANDS[1:]
    assert {"check", "eval"} <= {c.name for c in commands}, commands
    for command in commands:
        assert f"\n  {command.words} " in shown, (command.words, shown)


def test_the_reference_reads_the_registry_the_dispatch_reads(
    orsgen_subprocess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One command registry (issue 34): the docs hook lists exactly ``orsgen.cli.COMMANDS``,
    and each of them dispatches to the parser the reference shows."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import docs_hooks
    from orsgen import cli

    assert docs_hooks.commands() == list(cli.COMMANDS)
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps --help to the terminal's width
    for command in cli.COMMANDS[1:]:
        run = orsgen_subprocess([command.name, "--help"], env={"COLUMNS": "100"})
        assert run.code == 0, run.stderr
        assert run.stdout == command.build().format_help(), command.words


def test_the_readme_links_reach_their_pages_and_headings() -> None:
    """The README is not part of the site, so mkdocs cannot check its links: every relative
    link names a file that exists, and an anchor one of that page's headings."""
    import re

    from markdown.extensions.toc import slugify

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    relative = [link for link in links if "://" not in link]
    assert len(relative) >= 10, relative
    for link in relative:
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else ROOT / "README.md"
        assert target.is_file(), link
        if anchor:
            text = target.read_text(encoding="utf-8")
            headings = {slugify(h, "-") for h in re.findall(r"^#+ (.+)$", text, re.M)}
            assert anchor in headings, (link, sorted(headings))

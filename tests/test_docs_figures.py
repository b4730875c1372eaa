"""Figures that go stale are stated once (issue 34): the README states how long all tests and
the fast tier take, naming the machine; no other page repeats a test duration, and no page
quotes a count of tests (``pytest --collect-only -q`` gives it)."""

from __future__ import annotations

import re
from pathlib import Path

import docs_blocks
from conftest import ROOT


def _paragraphs(page: Path) -> list[str]:
    """The page's prose, a paragraph each (code blocks left out)."""
    text = (ROOT / page).read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]


def test_the_readme_states_both_test_durations_and_the_machine() -> None:
    stated = [p for p in _paragraphs(Path("README.md")) if "2-core x86_64" in p]
    assert len(stated) == 1, stated
    durations = re.search(
        r"all tests take about (\d+(?:\.\d+)?) min and the fast tier about (\d+(?:\.\d+)?) min",
        stated[0],
    )
    assert durations and "no GPU" in stated[0], stated[0]
    assert float(durations[2]) < float(durations[1]), stated[0]


def test_no_page_quotes_a_test_count_and_only_the_readme_a_test_duration() -> None:
    wrong = []
    for page in docs_blocks.pages():
        for paragraph in _paragraphs(page):
            if re.search(r"\b\d[\d,]* (tests|test cases)\b", paragraph):
                wrong.append(f"{page}: a test count: {paragraph[:120]}")
            about_tests = re.search(r"scripts/test\.sh|fast tier|test suite", paragraph)
            if page != Path("README.md") and about_tests and re.search(r"\b\d+ min\b", paragraph):
                wrong.append(f"{page}: a test duration: {paragraph[:120]}")
    assert wrong == [], "\n".join(wrong)

"""Debian's chromium driven through Playwright's Python API, for the viewer's tests.

The browser is the system's (``scripts/install.sh`` installs ``chromium`` with apt); the
tests never run ``playwright install``, which downloads a browser build. When either is
missing, :func:`page` skips with the reason, which ``-ra`` prints in the summary."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = os.environ.get("ORSGEN_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def missing() -> str | None:
    """Why the browser tests cannot run here, or ``None``."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return (
            f"no chromium at {CHROMIUM}: run scripts/install.sh as root (apt-get install -y "
            "chromium), or set ORSGEN_TEST_CHROMIUM"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed: pip install -c constraints.txt -e '.[dev]'"
    return None


@contextmanager
def browser(width: int = 1300, height: int = 800) -> Iterator[Any]:
    """A fresh browser context (a new empty profile directory) of the system chromium."""
    reason = missing()
    if reason is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="orsgen-chromium-")
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=ARGS,
                viewport={"width": width, "height": height},
            )
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)

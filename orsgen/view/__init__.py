"""``orsgen view RUN``: one self-contained HTML file to read what the model did (RUN: an
evaluation run directory or training trajectory JSONL); it needs no server, fetches nothing."""

from __future__ import annotations

import os
from pathlib import Path

from orsgen.rundir import write_whole
from orsgen.view.load import Run, load
from orsgen.view.page import render

__all__ = ["Run", "default_output", "load", "render", "write_view"]

VIEW_FILE = "view.html"


def default_output(run: str | os.PathLike[str]) -> Path:
    """Where the page goes without ``-o``: ``RUN/view.html`` for a directory, else beside
    the file, with ``.html``."""
    path = Path(run)
    return path / VIEW_FILE if path.is_dir() else path.with_suffix(".html")


def write_view(run: str | os.PathLike[str], out: str | os.PathLike[str] | None = None) -> Path:
    """Write ``run``'s page to ``out`` (:func:`default_output`); :class:`~orsgen.runlog.RunError`: no run."""
    target = Path(out) if out is not None else default_output(run)
    write_whole(target, render(load(run)))
    return target

"""Where ``-o DIR`` may write: a missing or empty directory, or a package orsgen generated.

Anything else is refused before any write, naming what is in the way. In an orsgen package
the user's own files are kept; a generated name without the ``@generated`` header is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from orsgen.generate.pipeline.write import GENERATED_MARKER, has_marker

# Left behind by tools, never the user's content.
IGNORED = frozenset({"__pycache__", ".gitkeep", ".DS_Store"})


class OutputDirError(Exception):
    """``-o DIR`` would overwrite something orsgen did not write (exit code 2)."""


def _is_orsgen_snapshot(path: Path) -> bool:
    """The layout every orsgen snapshot.json has, whatever its format version or hash."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and {"format", "environment", "package"} <= data.keys()


def is_orsgen_package(directory: Path) -> bool:
    """An orsgen snapshot.json beside an ``__init__.py`` carrying the @generated header."""
    return _is_orsgen_snapshot(directory / "snapshot.json") and has_marker(
        directory / "__init__.py"
    )


def _ours(path: Path) -> bool:
    if not path.is_file() or path.is_symlink():
        return False
    if path.name == "snapshot.json":
        return _is_orsgen_snapshot(path)
    if path.name == "py.typed":
        return path.stat().st_size == 0
    return has_marker(path)


def _listing(names: Iterable[str], limit: int = 8) -> str:
    shown = sorted(names)
    more = f" and {len(shown) - limit} more" if len(shown) > limit else ""
    return ", ".join(shown[:limit]) + more


def check_output_dir(directory: Path, produced: Iterable[str]) -> None:
    """Raise :class:`OutputDirError` unless ``produced`` can only replace files orsgen wrote."""
    if not directory.exists() and not directory.is_symlink():
        return
    if not directory.is_dir():
        raise OutputDirError(
            f"{directory} exists and is not a directory; -o takes a package directory"
        )
    present = [p for p in directory.iterdir() if p.name not in IGNORED]
    if not present:
        return
    if not is_orsgen_package(directory):
        # `-o generated` beside generated/echo: the package's own directory was meant.
        packages = any(p.is_dir() and is_orsgen_package(p) for p in present)
        where = f", e.g. -o {directory / 'NAME'} for a package named NAME" if packages else ""
        raise OutputDirError(
            f"{directory} is not empty and is not a package orsgen generated (it holds "
            f"{_listing(p.name for p in present)}); orsgen writes only into a new or empty "
            f"directory or over its own package: choose another -o{where}"
        )
    in_the_way = [
        name for name in produced if (directory / name).exists() and not _ours(directory / name)
    ]
    if in_the_way:
        raise OutputDirError(
            f"{directory} holds {_listing(in_the_way)} without the '{GENERATED_MARKER}' header: "
            "orsgen did not write it and will not overwrite it; move it away, or choose another -o"
        )

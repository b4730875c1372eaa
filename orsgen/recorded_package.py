"""Where a run's generated package is: run.json's ``package``, relative to the run directory
(a recording committed beside its package then resolves on any checkout, and no absolute
path of the machine that made it is written), and ``package_name``, its import name.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


@functools.cache
def package_path(klass: type) -> str | None:
    """The directory of the generated package that defines ``klass`` (where ``orsgen
    replay`` finds it), or ``None`` for a class defined elsewhere."""
    package = sys.modules.get(klass.__module__.rpartition(".")[0])
    where = getattr(package, "__file__", None)
    if where is None or not (Path(where).parent / "adapter.py").is_file():
        return None
    return str(Path(where).resolve().parent)


def recorded(package: str | Path | None, run: Path | None) -> dict[str, str]:
    """run.json's facts of ``package`` for a run directory ``run``: ``package`` relative to
    ``run`` (absolute for no ``run``) and ``package_name``; none for no package."""
    if package is None:
        return {}
    where = Path(package).resolve()
    relative = str(where) if run is None else os.path.relpath(where, run.resolve())
    return {"package": relative, "package_name": where.name}


def resolved(run: Path, config: Mapping[str, Any]) -> Path | None:
    """The package directory run.json (``config``) of ``run`` names, or ``None``; an absolute
    one (an older run) as it is."""
    package = config.get("package")
    if not isinstance(package, str) or not package:
        return None
    return Path(os.path.normpath(run / package))  # run / an absolute path is that path

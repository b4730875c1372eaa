"""Where a run directory's generated package is: run.json's ``package``, the package's
directory relative to the run directory, and ``package_name``, its import name. A recording
committed beside its package (``recordings/echo`` and ``generated/echo``) then resolves on any
checkout, and no absolute path of the machine that made it is written. A run written before
(an absolute ``package``) still reads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def recorded(package: str | Path | None, run: Path) -> dict[str, str]:
    """run.json's facts of ``package`` (a directory) for a run directory ``run``: ``package``
    relative to ``run``, and ``package_name``; none for no package."""
    if package is None:
        return {}
    where = Path(package).resolve()
    return {"package": os.path.relpath(where, run.resolve()), "package_name": where.name}


def resolved(run: Path, config: Mapping[str, Any]) -> Path | None:
    """The package directory run.json (``config``) of the run directory ``run`` names, or
    ``None``: a relative ``package`` from ``run``, an absolute one (an older run) as it is."""
    package = config.get("package")
    if not isinstance(package, str) or not package:
        return None
    return Path(os.path.normpath(run / package))  # run / an absolute path is that path

"""IR to Python source, in one place (hint, default, when sent); every value through ``repr``."""

from __future__ import annotations

import math
from typing import Any, Final

from orsgen.generate import ir


class Unset:
    """The marker for an optional parameter with no Python default (``_UNSET`` in source)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = Unset()
UNSET_SOURCE = "_UNSET"  # the runtime's marker, imported privately by the adapter


def python_default(value: Any, node: ir.Node, is_nullable: bool) -> Any:
    """A schema default when it is an immutable literal that fits ``node``, else ``UNSET``."""
    if value is None:
        return None if is_nullable else UNSET
    if not isinstance(value, (bool, int, float, str)):
        return UNSET  # lists and objects are mutable: documented, never a Python default
    if isinstance(value, float) and not math.isfinite(value):
        return UNSET  # ``repr`` would be ``nan``/``inf``, which is not a literal
    return value if ir.fits(value, node) else UNSET


def default(value: Any) -> str:
    return UNSET_SOURCE if isinstance(value, Unset) else repr(value)


def send_condition(name: str, value: Any) -> str:
    if isinstance(value, Unset) or value is None or isinstance(value, bool):
        return f"{name} is not {default(value)}"
    return f"{name} != {default(value)}"

"""Every Python parameter of a generated method and its wire name, read as a user would:
``WIRE_NAMES`` lists only the parameters whose names differ, and every other parameter
of the method's signature is sent under its own name."""

from __future__ import annotations

import inspect


def wire_params(cls: type, method: str) -> dict[str, str]:
    """``{python parameter: wire parameter}`` for every parameter of ``cls.method``."""
    differing = dict(cls.WIRE_NAMES[method][1])  # type: ignore[attr-defined]
    names = [p for p in inspect.signature(getattr(cls, method)).parameters if p != "self"]
    assert set(differing) <= set(names), (method, differing, names)
    return {name: differing.get(name, name) for name in names}

"""The adapter's constructor options that need more than a type: their checks, the hidden
``env_overrides`` copy, the task key of a reset, and the ``UNSET`` argument default."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def check_settings(group_size: int | None, keepalive: float | None, reconnect_for: float) -> None:
    """Reject constructor settings that no session could honour."""
    if group_size is not None and group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}")
    if keepalive is not None and keepalive <= 0:
        raise ValueError(f"keepalive must be positive, got {keepalive}")
    if reconnect_for < 0:
        raise ValueError(f"reconnect_for must be non-negative, got {reconnect_for}")


def task_key(index: int | None, task_spec: Mapping[str, Any] | None) -> tuple[str, str]:
    """Which task a reset opens, as a hashable key (equal keys: one GRPO group)."""
    if index is not None:
        return ("index", str(index))
    try:
        return ("spec", json.dumps(task_spec, sort_keys=True, default=repr))
    except (TypeError, ValueError):
        return ("spec-id", str(id(task_spec)))


class _Overrides(dict[str, str]):
    """``env_overrides`` whose repr shows names only, so no log or traceback holds a value."""

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: '<hidden>'" for k in self) + "}"


def overrides(values: Mapping[str, str] | None) -> dict[str, str] | None:
    """A private copy of ``env_overrides``; a bad entry is named by its key, never its value."""
    if not values:
        return None
    out = _Overrides()
    # Typed as objects: callers without a type checker may pass anything.
    items: list[tuple[object, object]] = list(values.items())
    for key, value in items:
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"env_overrides[{key!r}] must map a str name to a str value")
        out[key] = value
    return out


class _Unset:
    """Default of an optional tool argument the caller did not give: it is not sent."""

    _instance: "_Unset | None" = None

    def __new__(cls) -> "_Unset":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<unset>"

    def __reduce__(self) -> str:
        return "UNSET"


# Typed Any so an optional ``path: str = UNSET`` stays ``str`` for mypy and for TRL's
# schema (a ``str | None`` hint would tell the model null is allowed when it is not).
UNSET: Any = _Unset()

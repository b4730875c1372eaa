"""One typed test for "is this JSON value an object": ``isinstance(value, Mapping)`` leaves
pyright strict with ``Mapping[Unknown, Unknown]``; JSON keys are strings, said once here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from typing_extensions import TypeIs


def is_object(value: object) -> TypeIs[Mapping[str, Any]]:
    return isinstance(value, Mapping)


def is_array(value: object) -> TypeIs[list[Any]]:
    return isinstance(value, list)


def as_object(value: object) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one (for ``value or {}`` on JSON)."""
    return value if is_object(value) else {}


def as_array(value: object) -> list[Any]:
    """``value`` if it is a JSON array, else an empty one (for ``value or []`` on JSON)."""
    return value if is_array(value) else []


def is_sequence(value: object) -> TypeIs[Sequence[Any]]:
    """``isinstance(value, Sequence)``, with elements typed ``Any`` (e.g. a chat's messages)."""
    return isinstance(value, Sequence)

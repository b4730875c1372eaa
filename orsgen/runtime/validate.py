"""Client-side validation of nested tool arguments against a package's ``models.py``.

An invalid call costs no round trip: it fails through the adapter's ``_fail`` (recorded
as any failed call) and the model can try again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

MAX_ERRORS = 3
# The default of a models.py field that may be left out but not sent as null. pydantic never
# validates a default and the validated object is discarded, so the value is never used:
# only an explicit null is refused, as on the server. ``Any``, as no one value has every
# field's type.
OMITTED: Any = None
_MAX_TEXT = 60


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


def _where(loc: tuple[Any, ...], names: Mapping[str, str]) -> str:
    """``('spec', 'paths', 0, 'p')`` -> ``spec.paths[0].p``, the first part in Python naming."""
    if not loc:
        return "arguments"
    head = str(loc[0])
    text = names.get(head, head)
    for part in loc[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def check_arguments(
    model: type[BaseModel], arguments: Mapping[str, Any], names: Mapping[str, str]
) -> str | None:
    """``None`` when ``arguments`` (keyed by wire name) fit ``model``; otherwise a short
    message naming each bad parameter (``names`` maps wire to Python names) and what
    was expected."""
    try:
        model.model_validate(dict(arguments))
    except ValidationError as exc:
        problems: list[str] = []
        errors = exc.errors(include_url=False)
        for err in errors[:MAX_ERRORS]:
            where = _where(tuple(err.get("loc", ())), names)
            message = str(err.get("msg", "is invalid"))
            if err.get("type") == "missing":
                problems.append(f"{where} is required")
            else:
                problems.append(f"{where}: {message} (got {_short(err.get('input'))})")
        more = len(errors) - MAX_ERRORS
        suffix = f"; and {more} more problem(s)" if more > 0 else ""
        params = sorted({_where(tuple(e["loc"][:1]), names) for e in errors if e.get("loc")})
        which = ", ".join(params) or "arguments"
        return (
            f"invalid argument(s) {which}: " + "; ".join(problems) + suffix + "; nothing was sent"
        )
    except Exception:  # noqa: BLE001 - never raise into the trainer; the server still validates
        return None
    return None

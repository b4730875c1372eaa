"""Which generated packages this runtime can serve: a package's ``version.py`` imports one
name (``requires_2_0``); a name this runtime lacks fails at import, saying what to do.
"""

from __future__ import annotations

RUNTIME_VERSION = "2.0"
# Every contract this runtime implements; a new minor adds a name, a new major drops old ones.
# 2.0: generated methods pass their tool's wire name to ``_fail(wire_name, message)``, and
# models.py's omittable fields default to ``validate.OMITTED``; 1.0 packages called
# ``_fail(message)``, so they must be regenerated.
requires_2_0 = True


def __getattr__(name: str) -> object:
    if name.startswith("requires_"):
        wanted = name.removeprefix("requires_").replace("_", ".")
        from orsgen._version import __version__

        raise ImportError(
            f"this adapter package was generated for orsgen runtime {wanted}, but the installed "
            f"orsgen {__version__} provides runtime {RUNTIME_VERSION}. Install an orsgen release "
            f"that provides runtime {wanted}, or regenerate the package with the installed one: "
            f"`orsgen DIR/snapshot.json -o DIR`."
        )
    raise AttributeError(name)

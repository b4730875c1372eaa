"""Every Python name orsgen emits. Case is preserved so the model sees a name as close to
the wire name as Python allows; collisions resolve in sorted wire-name order, never the
server's listing order."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import keyword
import re
import sys
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath

MAX_NAME_LENGTH = 64

# Names the generated class body evaluates in annotations and a method body refers to: a method
# or parameter with one of these names would shadow the type (``_args: dict[str, Any]``).
ANNOTATION_NAMES = frozenset(
    {"str", "int", "float", "bool", "list", "dict", "tuple", "object", "None", "Any", "Literal"}
    | {"ClassVar", "True", "False"}
)
# TRL treats these specially; the adapter base class owns the rest.
TRL_NAMES = frozenset({"reset", "get_reward"})
ADAPTER_ATTRIBUTES = frozenset(
    {"reward", "rewards", "metadata", "finished", "last_output", "close", "close_all"}
    | {"degraded_rollouts", "rollout", "WIRE_NAMES", "ENV_NAME", "DEPLOYMENT", "DEFAULT_URL"}
    | {"DEFAULT_SPLIT", "TOOLS_SHA256", "TOOLSET", "TERMINAL_TOOL", "SUPPORTS_SCORE_GROUP"}
    | {"PASS_THRESHOLD"}
)
# Fixed lists (Python 3.11's), so names never depend on the interpreter. A tool named ``match``
# reads like a statement, so soft keywords are renamed too, but not the common ``type``.
HARD_KEYWORDS = frozenset(
    {"False", "None", "True", "and", "as", "assert", "async", "await", "break", "class"}
    | {"continue", "def", "del", "elif", "else", "except", "finally", "for", "from"}
    | {"global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass"}
    | {"raise", "return", "try", "while", "with", "yield"}
)
SOFT_KEYWORDS = frozenset({"_", "case", "match"})
RESERVED_METHODS = (
    HARD_KEYWORDS | SOFT_KEYWORDS | ANNOTATION_NAMES | TRL_NAMES | ADAPTER_ATTRIBUTES
) | {"self", "cls"}
RESERVED_PARAMS = HARD_KEYWORDS | SOFT_KEYWORDS | ANNOTATION_NAMES | {"self", "cls"}


def transliterate(text: str) -> str:
    """Best-effort ASCII: accents are dropped (``é`` → ``e``); other letters are removed."""
    decomposed = unicodedata.normalize("NFKD", text)
    return decomposed.encode("ascii", "ignore").decode("ascii")


def sanitize(wire: str, fallback: str) -> str:
    """A valid identifier: never empty, never a leading digit or ``_`` (TRL hides those)."""
    text = re.sub(r"[^0-9A-Za-z_]+", "_", transliterate(wire))
    text = re.sub(r"_+", "_", text).strip("_")
    if not text:
        text = fallback
    if text[0].isdigit():
        text = f"{fallback}_{text}"
    if len(text) > MAX_NAME_LENGTH:
        digest = hashlib.sha256(wire.encode("utf-8")).hexdigest()[:8]
        text = f"{text[: MAX_NAME_LENGTH - 9].rstrip('_')}_{digest}"
    return text


def check_rename(name: str, reserved: frozenset[str]) -> str | None:
    if not name.isidentifier() or not name.isascii():
        return f"{name!r} is not a Python identifier"
    if name.startswith("_"):
        return f"{name!r} starts with '_', which TRL hides from the model"
    if name in reserved:
        return f"{name!r} is reserved"
    return None


def assign(
    wires: Iterable[str],
    reserved: frozenset[str],
    fallback: str,
    preferred: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Map each wire name to a unique, non-reserved Python name: renames (``preferred``)
    claim first, clean identifiers keep theirs, the rest are sanitized, suffixed ``_`` when
    reserved and numbered (``_2``, ...) on collision, in sorted wire-name order."""
    unique = sorted(set(wires))
    taken: set[str] = set(reserved)
    result: dict[str, str] = {}
    for wire, name in sorted((preferred or {}).items()):
        if wire in unique and name not in taken:
            result[wire] = name
            taken.add(name)
    # Exact, unreserved identifiers next: a renamed tool never takes one's name.
    for wire in unique:
        if (
            wire not in result
            and wire not in taken
            and _base_name(wire, reserved, fallback) == wire
        ):
            result[wire] = wire
            taken.add(wire)
    # Then the rest: a name that only needed a reserved-word suffix (``class``) comes
    # before one that needed sanitizing (``__class__``), then by wire name.
    for wire in sorted(unique, key=lambda w: (sanitize(w, fallback) != w, w)):
        if wire in result:
            continue
        base = _base_name(wire, reserved, fallback)
        name, n = base, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        result[wire] = name
        taken.add(name)
    return result


def _base_name(wire: str, reserved: frozenset[str], fallback: str) -> str:
    name = sanitize(wire, fallback)
    if name in reserved or (wire.startswith("__") and wire.endswith("__")):
        name = f"{name}_"
    return name


def method_names(
    wires: Iterable[str], preferred: Mapping[str, str] | None = None
) -> dict[str, str]:
    return assign(wires, RESERVED_METHODS, "tool", preferred)


def param_names(wires: Iterable[str], preferred: Mapping[str, str] | None = None) -> dict[str, str]:
    return assign(wires, RESERVED_PARAMS, "arg", preferred)


def pascal_case(text: str) -> str:
    parts = re.split(r"[^0-9A-Za-z]+", transliterate(text))
    words = [p[:1].upper() + p[1:] for p in parts if p]
    name = "".join(words) or "Ors"
    return f"Env{name}" if name[0].isdigit() else name


def class_name(env_name: str) -> str:
    """``echoenv`` → ``EchoenvEnv``; ``Eigent/SETA`` → ``SetaEnv``; never ``...EnvEnv``."""
    name = pascal_case(env_name.rsplit("/", 1)[-1])
    if name.isupper():
        name = name.capitalize()
    return name if name.endswith("Env") else f"{name}Env"


def package_name(directory_name: str) -> str:
    name = re.sub(r"[^0-9a-z_]+", "_", transliterate(directory_name).lower()).strip("_")
    if not name or name[0].isdigit() or keyword.iskeyword(name):
        name = f"env_{name}"
    return name


def _why_renamed(directory_name: str) -> str:
    if keyword.iskeyword(directory_name) or keyword.issoftkeyword(directory_name):
        return "is a Python keyword"
    if directory_name[:1].isdigit():
        return "starts with a digit"
    if not directory_name.isascii():
        return "is not ASCII"
    if not directory_name.isidentifier():
        bad = sorted({c for c in directory_name if not (c.isalnum() or c == "_")})
        return f"contains {', '.join(repr(c) for c in bad) or 'characters'}, which a Python name cannot"
    return "is not lower case"


def import_notes(directory: PurePath, package: str) -> list[str]:
    """Python imports a package by its directory name, whatever name orsgen gives it."""
    name = directory.name
    if name == package:
        return []
    fix = f"-o {(directory.parent / package).as_posix()}"
    if not name.isidentifier() or keyword.iskeyword(name):
        why = _why_renamed(name)
        return [
            f"output directory name {name!r} {why}: the generated package is named "
            f"{package!r}, but Python imports a package by its directory name, and "
            f"{name!r} cannot be imported with an import statement; write it with "
            f"`{fix}` (or rename the directory to {package!r}) to `import {package}`"
        ]
    return [
        f"the generated package is named {package!r} (its docs say `from {package} import "
        f"...`), but Python imports it by its directory name: `import {name}`; to match, "
        f"write it with `{fix}` or pass --package {name}"
    ]


def shadowed_module(name: str, directory: Path) -> str | None:
    """The module (found without importing it) ``import NAME`` could also mean, if any."""
    if not name.isidentifier():
        return None
    if name in sys.stdlib_module_names:
        return f"the standard-library module {name!r}"
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return None  # nothing importable by that name (the common case: no metadata scan)
    # Reading every distribution's file list takes most of a second: only for a name that imports.
    distributions = importlib.metadata.packages_distributions().get(name)
    if distributions:
        return f"the installed module {name!r} (from {', '.join(sorted(set(distributions)))})"
    where = spec.origin or next(iter(spec.submodule_search_locations or []), None)
    if where is None or Path(where).resolve().is_relative_to(directory.resolve()):
        return None  # nothing, a namespace package, or this package itself
    return f"the installed module {name!r} ({where})"


def shadowing_notes(directory: Path) -> list[str]:
    name = directory.name
    other = shadowed_module(name, directory)
    if other is None:
        return []
    fix = f"-o {(directory.parent / f'{name}_env').as_posix()}"
    return [
        f"package name {name!r} shadows {other}: wherever {directory.parent.as_posix()!r} is "
        f"on sys.path, `import {name}` may find the other module, or code that wants the other "
        f"module may get this package; choose another name, e.g. `{fix}`"
    ]

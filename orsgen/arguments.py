"""argparse as orsgen's commands use it: a mistyped option names the closest valid one,
option values are checked before any network, and an error is one line that
``orsgen.cli.main`` prints: :class:`UsageError` or :class:`~orsgen.runlog.RunError` (exit
2), or :class:`Failed` (exit 1)."""

from __future__ import annotations

import argparse
import importlib
import math
import os
import re
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from orsgen.rundir import RunError as RunError
from orsgen.wording import did_you_mean

_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


class UsageError(Exception):
    """Bad arguments or an unusable target: one line on stderr, exit code 2."""


class Failed(Exception):
    """A failure after the work started (nothing written, a failed check): exit code 1."""


def secret_pairs(pairs: Sequence[str]) -> dict[str, str] | None:
    """`--secret NAME=VALUE` pairs as a dict."""
    if not pairs:
        return None
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError("--secret takes NAME=VALUE")
        out[name] = value
    return out


def number(text: str, what: str = "a number") -> float:
    """An option's finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text} is not {what}")
    return value


def http_url(text: str) -> str:
    """An option's http(s) URL (``--endpoint``, ``--base-url``)."""
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r} is not an http(s) URL")
    return text


def output(path: str, flag: str) -> Path:
    """Where ``flag`` writes: a path whose directory exists, or lies inside the working
    directory (where the missing directories are made). Nothing is ever made above it."""
    where = Path(os.path.abspath(path)).parent
    if not where.is_dir() and not where.is_relative_to(Path.cwd()):
        raise UsageError(f"{flag} {path}: directory {where} does not exist; create it first")
    return Path(path)


def run_directory(path: str, flag: str) -> Path:
    """:func:`output` for a run directory: refused when ``path`` is an existing file."""
    out = output(path, flag)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{flag} {path} is a file, not a directory; name a run directory")
    return out


def seconds(text: str) -> float:
    """``--timeout``: a positive number of seconds."""
    value = number(text, "a number of seconds")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def price(text: str) -> tuple[float, float]:
    """``--price IN,OUT``: two numbers of at least 0."""
    parts = [in_range(0.0)(part) for part in text.split(",")]
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"takes IN,OUT (per million tokens: 3,15), got {text!r}")
    return parts[0], parts[1]


def in_range(low: float, high: float = math.inf) -> Callable[[str], float]:
    """An option's number between ``low`` and ``high`` (both included)."""

    def parse(text: str) -> float:
        value = number(text)
        if not low <= value <= high:
            bound = f"between {low:g} and {high:g}" if high < math.inf else f"at least {low:g}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {text}")
        return value

    return parse


def at_least(low: int) -> Callable[[str], int]:
    """An option's whole number of at least ``low``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    return parse


def needs(extra: str, modules: Sequence[str]) -> None:
    """Import ``modules``, those of ``orsgen[extra]``, or say what to install."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise UsageError(f"{exc}; install the {extra} extra: pip install 'orsgen[{extra}]'")


def environment_options(
    p: argparse.ArgumentParser,
    *,
    base_url: str | None = None,
    several: bool = False,
    target: bool = False,
    when: str = "",
) -> None:
    """The options that reach an environment, declared once for every command:
    ``--base-url`` (``base_url``: its default; ``several``: repeatable), ``--env-name`` and
    ``--toolset`` (``target``: a command that opens a TARGET), ``--api-key`` and
    ``--secret`` (``when``: "with --live: ")."""
    if base_url is not None:
        many, action = (" (repeat for several)", "append") if several else ("", "store")
        help = f"ORS server URL{many} (default: {base_url})"
        p.add_argument("--base-url", type=http_url, action=action, help=help)
    if target:
        p.add_argument("--env-name", help="environment on a server that hosts several")
        toolset = "bind an SDK harness toolset (e.g. claude-code) in every session; part of "
        p.add_argument("--toolset", metavar="NAME", help=f"{toolset}the environment's identity")
    never = "never written anywhere"
    p.add_argument("--api-key", help=f"{when}ORS API key (default: OPENREWARD_API_KEY); {never}")
    help = f"{when}per-session secret (repeatable); {never}"
    p.add_argument("--secret", action="append", default=[], metavar="NAME=VALUE", help=help)


def rollout_options(p: argparse.ArgumentParser, concurrency: int, what: str, package: bool) -> None:
    """``--concurrency`` (``what`` at once) and ``--pass-threshold`` (``package``: by default
    the package's)."""
    from orsgen.runtime.records.passk import PASS_THRESHOLD

    help = f"{what} at once (default {concurrency})"
    p.add_argument("--concurrency", type=at_least(1), default=concurrency, help=help)
    default = "the package's pass threshold, else " if package else ""
    help = f"a rollout passes when its reward >= this (default: {default}{PASS_THRESHOLD:g})"
    threshold = None if package else PASS_THRESHOLD
    p.add_argument("--pass-threshold", type=number, default=threshold, help=help)


@dataclass(frozen=True)
class Command:
    """``orsgen NAME ...`` (``name`` "" for ``orsgen TARGET -o DIR``): ``module.parser()``,
    and ``run(argv)`` returning an exit code."""

    name: str
    module: str
    synopsis: str
    summary: str
    parser: str = "parser"
    run: str = "main"

    @property
    def words(self) -> str:
        return f"orsgen {self.name}".strip()

    def build(self) -> argparse.ArgumentParser:
        built: argparse.ArgumentParser = getattr(
            importlib.import_module(self.module), self.parser
        )()
        return built

    def __call__(self, argv: Sequence[str]) -> int:
        code: int = getattr(importlib.import_module(self.module), self.run)(argv)
        return code


class Parser(argparse.ArgumentParser):
    """argparse that names the closest option for a mistyped one (``--spilt``: did you
    mean ``--split``?); Python 3.11's argparse has no ``suggest_on_error``."""

    def parse(self, argv: Sequence[str]) -> argparse.Namespace:
        options = [o for action in self._actions for o in action.option_strings]
        unknown = _unknown_option(argv, options)
        if unknown is not None:  # before parse_args, whose missing -o error would come first
            self.error(f"unrecognized arguments: {unknown}{did_you_mean(unknown, options)}")
        return self.parse_args(argv)

    def option(self, dest: str) -> str | None:
        """The option that sets ``dest`` as ``--help`` names it (``-n/--samples``, ``DIR``),
        or ``None``."""
        found = next((a for a in self._actions if a.dest == dest), None)
        return None if found is None else "/".join(found.option_strings) or dest.upper()

    def error(self, message: str) -> NoReturn:
        """One line, without argparse's usage block."""
        self.exit(2, f"{self.prog}: error: {message}\n")


def _unknown_option(argv: Sequence[str], options: Sequence[str]) -> str | None:
    """The first argument that looks like an option and that argparse would not accept."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-") or arg == "-" or _NUMBER.match(arg):
            continue
        name = arg.split("=", 1)[0]
        if name in options or (arg[:2] in options and not arg.startswith("--")):
            continue  # an option, or a short one with its value attached (-ogenerated/x)
        if name.startswith("--") and any(o.startswith(name) for o in options):
            continue  # argparse accepts an unambiguous prefix (--spl for --split)
        return name
    return None

"""``orsgen serve SOURCE [--port P] [--host H]``: an ORS server in the foreground until
SIGTERM (exit 0) or Ctrl-C (exit 130). Its URL is stdout's one line, printed once it
answers, so that a script can wait for it. Exit code 2, one line, for a SOURCE that cannot
be served or an address that cannot be listened on."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from orsgen.arguments import Parser, UsageError
from orsgen.snapshot.errors import TargetError
from orsgen.snapshot.local import serve_environments, serve_file


def parser() -> Parser:
    p = Parser(
        prog="orsgen serve",
        description="Serve an environment as an ORS server until SIGTERM or Ctrl-C: the "
        "Environment classes a Python file defines, or the environment an `orsgen eval` run "
        "recorded (no network, no key: a call that continues a recorded rollout gets its "
        "recorded result, any other a tool error). Prints its URL, one line, once it answers.",
    )
    p.add_argument(
        "source",
        metavar="SOURCE",
        help="a Python file that defines Environment classes, or an `orsgen eval --out` run",
    )
    p.add_argument(
        "--port",
        type=_port,
        default=0,
        help="port to listen on, 0 to 65535 (default 0: a free one)",
    )
    p.add_argument(
        "--host", type=_host, default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    p.add_argument(
        "--package",
        metavar="DIR",
        help="for a run: the generated package it evaluated, whose snapshot has the tools "
        "(default: the one its run.json names)",
    )
    return p


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be between 0 and 65535, got {value}")
    return value


def _host(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "is empty, which would listen on every interface; name an address (0.0.0.0 for "
            "every IPv4 interface)"
        )
    return text


@contextmanager
def _serving(args: Any) -> Generator[str, None, None]:
    """The server of SOURCE, running; its URL."""
    source = Path(args.source)
    if source.is_dir():
        from orsgen.serve.environment import environment_class
        from orsgen.serve.recording import load

        recording = load(source, Path(args.package) if args.package else None)
        envs = [environment_class(recording)]
        with serve_environments(envs, str(source), args.host, args.port) as url:
            yield url
        return
    if args.package:
        raise UsageError("--package applies to a run directory only")
    if source.suffix != ".py" or not source.is_file():
        raise UsageError(
            f"{source} is neither a Python file that defines Environment classes nor an "
            "`orsgen eval` run directory"
        )
    with serve_file(source, args.host, args.port) as (url, _):
        yield url


def main(argv: Sequence[str]) -> int:
    args = parser().parse(list(argv))
    os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")  # not a line per request
    # A flag, not a threading.Event: set() from a signal handler deadlocks when the signal
    # lands while this thread holds the event's lock (entering its wait()).
    stop: list[int] = []

    def stopped(signum: int, frame: object) -> None:
        stop.append(signum)

    before = signal.signal(signal.SIGTERM, stopped)
    try:
        with _serving(args) as url:
            print(url, flush=True)
            print(f"orsgen serve: serving {args.source} at {url}", file=sys.stderr, flush=True)
            while not stop:
                time.sleep(0.2)  # a signal's handler runs during it
    except TargetError as exc:
        raise UsageError(str(exc)) from None
    finally:
        signal.signal(signal.SIGTERM, before)
    print("orsgen serve: stopped", file=sys.stderr, flush=True)
    return 0

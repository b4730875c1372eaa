"""Command line: argument parsing, progress output and exit codes only. Exit codes: 0
success; 1 error diagnostics, drift or staleness; 2 usage error or an unusable target; 130
interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from orsgen._version import __version__
from orsgen.generate.pipeline import checks
from orsgen.generate.pipeline import run as pipeline
from orsgen.arguments import Command, Failed, RunError, UsageError, environment_options, output
from orsgen.arguments import Parser as _Parser, secret_pairs, seconds as _seconds
from orsgen.diagnostics import Diagnostic, grouped, has_errors
from orsgen.generate.pipeline.run import Request, Result
from orsgen.snapshot.stored import Snapshot
from orsgen.generate.pipeline.versioning import WORDS
from orsgen.wording import closest, plural

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


# Progress comes from the runtime loop's thread too (retry lines): once the user pressed
# Ctrl-C, "interrupted" is the last line, whatever that thread still does before exit.
_output = threading.Lock()
_interrupted = False


def _line(text: str) -> None:
    with _output:
        if not _interrupted:
            print(text, file=sys.stderr, flush=True)


def _say(message: str, quiet: bool = False) -> None:
    if not quiet:
        _line(f"orsgen: {message}")


def _say_interrupted() -> None:
    global _interrupted
    with _output:
        _interrupted = True
        print("orsgen: interrupted", file=sys.stderr, flush=True)
    # What the loop thread was doing is cut short at exit: a coroutine it never started, an
    # SDK import the exit broke, an event loop the interrupt caught half-built (its __del__
    # fails at exit). Their complaints would follow "interrupted" as tracebacks.
    warnings.simplefilter("ignore")
    logging.getLogger("asyncio").disabled = True
    sys.unraisablehook = lambda _unraisable: None


COMMANDS = (
    Command(
        "",
        __name__,
        "TARGET -o DIR",
        "snapshot an environment and generate its typed adapter package",
        "generate_parser",
        "run_generate",
    ),
    Command(
        "check",
        __name__,
        "DIR [--live]",
        "exit 1 when DIR is stale or hand-edited, or (--live) when the environment drifted "
        "from its snapshot",
        "check_parser",
        "run_check",
    ),
    Command(
        "eval",
        "orsgen.eval.command",  # needs orsgen[eval]
        "DIR --endpoint URL --model NAME",
        "evaluate a model on the environment through the package",
    ),
    Command(
        "compare",
        "orsgen.eval.compare_command",
        "RUN_A RUN_B [RUN ...]",
        "each run against the first, pass@1 paired by task (alias: orsgen eval --compare)",
    ),
    Command(
        "merge",
        "orsgen.eval.merge_command",  # needs orsgen[eval]
        "SHARD... --out RUN",
        "the shards of a run (eval --shard I/N) as one run (alias: orsgen eval --merge)",
    ),
    Command(
        "sft",
        "orsgen.data.sft",  # needs orsgen[train]
        "RUN_DIR [RUN_DIR ...] -o OUT",
        "the passing rollouts of evaluation runs as a dataset for TRL's SFTTrainer",
    ),
    Command(
        "pairs",
        "orsgen.data.pairs",  # needs orsgen[train]
        "RUN_DIR [RUN_DIR ...] -o OUT",
        "passing and non-passing rollouts of the same task of evaluation runs as preference "
        "pairs for TRL's DPOTrainer",
    ),
    Command(
        "replay",
        "orsgen.replay.command",
        "RUN --out OUT",
        "replay a recorded evaluation run's tool calls against the environment: exit 1 when "
        "its rewards changed",
    ),
    Command(
        "validate",
        "orsgen.validation.command",
        "TARGET [--out DIR]",
        "probe an environment for the defects that waste a training run (a gameable grader, "
        "rewards that change, a split that leaks, shared session state): exit 1 on an error",
    ),
    Command("view", "orsgen.view.command", "RUN [-o FILE.html]", "a run's rollouts, one HTML page"),
    Command(
        "export",
        "orsgen.runlog.command",
        "RUN --format inspect|parquet -o FILE",
        "a run as an Inspect log (.eval) or a Parquet file, one sample or row per rollout",
    ),
    Command(
        "serve",
        "orsgen.serve.command",
        "SOURCE [--port P] [--host H]",
        "serve an environment as an ORS server until SIGTERM: the classes a Python file "
        "defines, or the environment an evaluation run recorded (no network, no key)",
    ),
)


ALIASES = {"--compare": "compare", "--merge": "merge"}  # orsgen eval --merge: orsgen merge


def _unaliased(argv: list[str]) -> list[str]:
    """``argv`` with ``eval`` and its first alias flag as the command."""
    at = next((i for i, a in enumerate(argv) if a in ALIASES), 0) if argv[:1] == ["eval"] else 0
    return [ALIASES[argv[at]], *argv[1:at], *argv[at + 1 :]] if at else argv


def _print_diagnostics(diagnostics: Sequence[Diagnostic], verbose: bool = False) -> None:
    for line in grouped(diagnostics, verbose):
        print(f"  {line}", file=sys.stderr)


def _epilog() -> str:
    lines = ["other commands (each has --help, as has orsgen help COMMAND):"]
    for command in COMMANDS[1:]:
        lines.append(f"  {command.words} {command.synopsis}")
        lines.append(
            textwrap.fill(command.summary, 88, initial_indent=" " * 6, subsequent_indent=" " * 6)
        )
    return "\n".join(lines)


def generate_parser() -> _Parser:
    p = _Parser(
        prog="orsgen",
        description="Snapshot an ORS environment and generate a typed TRL adapter package.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "target", help="catalog name (namespace/name), URL, Python file, or DIR/snapshot.json"
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        help="package directory to write, e.g. generated/seta (its directory must exist "
        "unless it is inside the working directory)",
    )
    p.add_argument(
        "--split",
        help="default split for load_tasks and reset (default: train, else the only or first split)",
    )
    p.add_argument(
        "--no-task-tools", action="store_true", help="skip probing sessions for task tools"
    )
    p.add_argument(
        "--probe-index",
        type=int,
        action="append",
        metavar="N",
        help="task index to probe for task tools (repeatable; default 0)",
    )
    p.add_argument("--package", help="Python package name (default: from the output directory)")
    p.add_argument("--class-name", help="adapter class name (default: from the environment name)")
    p.add_argument("--config", help="config file (default: nearest orsgen.toml or [tool.orsgen])")
    p.add_argument("--fail-on-warning", action="store_true", help="treat warnings as errors")
    _snapshot_options(p, "")
    p.add_argument("--version", action="version", version=f"orsgen {__version__}")
    return p


def _snapshot_options(p: _Parser, live: str) -> None:
    """The options of both commands that snapshot (``live``: "with --live: " for check)."""
    environment_options(p, target=not live, when=live)
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=120.0,
        help=f"{live}seconds for the whole snapshot (default 120)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.add_argument(
        "--verbose", action="store_true", help="each warning on its own line, never grouped"
    )


def check_parser() -> _Parser:
    p = _Parser(
        prog="orsgen check",
        description="Exit 1 when a generated package is stale (offline), or with --live when "
        "the environment has drifted from its snapshot.",
    )
    p.add_argument("directory", help="generated package directory")
    p.add_argument(
        "--live", action="store_true", help="re-snapshot the environment, classify drift"
    )
    p.add_argument("--target", help="with --live: where to snapshot (default: the recorded target)")
    p.add_argument(
        "--fail-on",
        choices=("any", "breaking"),
        default="any",
        help="with --live: exit 1 on any drift (default) or only on breaking drift",
    )
    _snapshot_options(p, "with --live: ")
    return p


def _request(args: argparse.Namespace) -> Request:
    return Request(
        target=args.target,
        output=Path(args.output),
        env_name=args.env_name,
        split=args.split,
        task_tools=not args.no_task_tools,
        probe_indices=tuple(args.probe_index) if args.probe_index else None,
        toolset=args.toolset,
        secrets=secret_pairs(args.secret),
        api_key=args.api_key,
        package=args.package,
        class_name=args.class_name,
        config=Path(args.config) if args.config else None,
        timeout=args.timeout,
        fail_on_warning=args.fail_on_warning,
    )


def _refusal(result: Result) -> str:
    out, count = result.output, len(result.diagnostics)
    return {
        "errors": f"nothing written to {out}; fix the errors above",
        "warnings": f"nothing written to {out}: --fail-on-warning and {plural(count, 'warning')}",
        "secret in snapshot": "refusing to write a snapshot that contains a secret value",
    }.get(result.refused or "", "refusing to write generated code that contains a secret value")


def run_generate(argv: Sequence[str]) -> int:
    if argv and _mistyped_command(argv[0]):
        names = [c.name for c in COMMANDS if c.name]
        raise UsageError(f"unknown command {argv[0]!r}; did you mean {closest(argv[0], names)!r}?")
    args = generate_parser().parse(argv)
    output(args.output, "-o")
    started = time.perf_counter()
    result = pipeline.run(_request(args), progress=lambda m: _say(m, args.quiet))
    found = result.diagnostics
    if found:
        _say(f"{plural(len(found), 'diagnostic')}:", args.quiet and not has_errors(found))
        _print_diagnostics(found, args.verbose)
    if not result.written:
        raise Failed(_refusal(result))
    for note in result.notes:  # printed even with -q, as warnings are
        _say(f"warning: {note}")
    validate = f"; before training on it: orsgen validate {shlex.quote(args.target)}"
    _say(
        f"wrote {plural(len(result.files), 'file')} to {result.output} ({result.class_name}, "
        f"{plural(result.tool_count, 'tool')}, version {result.version}) in "
        f"{time.perf_counter() - started:.2f} s{'' if args.target.endswith('.json') else validate}",
        args.quiet,
    )
    return EXIT_OK


def run_check_live(args: argparse.Namespace, snapshot: Snapshot) -> int:
    drift = checks.live_drift(
        Path(args.directory),
        snapshot,
        target=args.target,
        secrets=secret_pairs(args.secret),
        api_key=args.api_key,
        timeout=args.timeout,
        progress=lambda m: _say(m, args.quiet),
    )
    _print_diagnostics(drift.diagnostics, args.verbose)
    changes = drift.changes
    if changes.level == "unchanged":
        _say(f"no drift: the live environment matches {args.directory}/snapshot.json", args.quiet)
        return EXIT_OK
    print(f"drift ({WORDS[changes.level]}, would bump to a {changes.level} version):")
    print(changes.report())
    if args.fail_on == "any" or changes.level == "major":
        raise Failed(
            f"the environment drifted; regenerate with "
            f"`orsgen {drift.target.value} -o {args.directory}`"
        )
    _say("non-breaking drift only (--fail-on breaking)", args.quiet)
    return EXIT_OK


def run_check(argv: Sequence[str]) -> int:
    from orsgen.snapshot.model import SnapshotError, load_text

    args = check_parser().parse(argv)
    directory = Path(args.directory)
    path = directory / "snapshot.json"
    if not path.is_file():
        raise UsageError(checks.not_a_package(directory))
    try:
        snapshot = load_text(path.read_text(encoding="utf-8"), str(path))
    except SnapshotError as exc:
        raise Failed(str(exc)) from None
    if args.live:
        return run_check_live(args, snapshot)
    generated, stale = checks.stale_files(directory, snapshot)
    if not generated.ok:
        _print_diagnostics(generated.diagnostics, args.verbose)
        raise Failed(f"{path} does not generate a package; see the errors above")
    for each in stale:
        sys.stdout.writelines(each.diff(directory))
    if stale:
        raise Failed(
            f"{plural(len(stale), 'file')} in {directory} "
            f"{'differs' if len(stale) == 1 else 'differ'} from what snapshot.json generates; "
            f"regenerate with `orsgen {path} -o {directory}`"
        )
    mismatch = checks.config_mismatch(directory, snapshot)
    if mismatch is not None:
        raise Failed(
            f"{directory} was generated with another configuration than {mismatch.path} "
            f"sets ({'; '.join(mismatch.differences)}); regenerate with "
            f"`orsgen {path} -o {directory}`"
        )
    _say(f"{directory} is up to date ({plural(len(generated.files), 'file')})", args.quiet)
    return EXIT_OK


def _mistyped_command(word: str) -> bool:
    """``orsgen veiw RUN``: a bare word near a command's name that is no file is no target
    either, so say so before argparse asks for -o."""
    bare = not any(c in word for c in "/:.\\") and not word.startswith("-")
    names = [c.name for c in COMMANDS if c.name]
    return bare and closest(word, names) is not None and not Path(word).exists()


def main(argv: Sequence[str] | None = None) -> int:
    global _interrupted
    _interrupted = False  # main() runs more than once in one process (tests, embedding)
    argv = _unaliased(list(sys.argv[1:] if argv is None else argv))
    named = {c.name: c for c in COMMANDS}
    if argv[:1] == ["help"] and not Path("help").exists():  # orsgen help [COMMAND]
        if argv[1:] not in ([], *([n] for n in named if n)):
            names, got = ", ".join(n for n in named if n), " ".join(argv[1:])
            _line(f"orsgen help: error: takes one command of {names}, or none; got {got}")
            return EXIT_USAGE
        argv = [*argv[1:], "--help"]
    command = named.get(argv[0] if argv else "", COMMANDS[0])
    try:
        return command(argv[1:] if command.name else argv)
    except (UsageError, RunError, pipeline.RequestError, Failed) as exc:
        _line(f"{command.words}: error: {' '.join(str(exc).split())}")  # one line, always
        return EXIT_FAIL if isinstance(exc, Failed) else EXIT_USAGE
    except KeyboardInterrupt:
        _say_interrupted()
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())

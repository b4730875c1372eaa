"""Command line: argument parsing, progress output and exit codes only.

Exit codes: 0 success; 1 error diagnostics, drift or staleness; 2 usage error or an
unusable target.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orsgen import __version__
from orsgen.diagnostics import Diagnostic, has_errors

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad arguments or an unusable target: one line on stderr, exit code 2."""


def _say(message: str, quiet: bool = False) -> None:
    if not quiet:
        print(f"orsgen: {message}", file=sys.stderr, flush=True)


def _print_diagnostics(diagnostics: Sequence[Diagnostic]) -> None:
    for diag in sorted(diagnostics, key=lambda d: (d.level != "error", d.tool or "", d.pointer)):
        print(f"  {diag.format()}", file=sys.stderr)


def _secrets(pairs: Sequence[str]) -> dict[str, str] | None:
    if not pairs:
        return None
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError("--secret takes NAME=VALUE")
        out[name] = value
    return out


def _generate_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="orsgen",
        description="Snapshot an ORS environment and generate a typed TRL adapter package. "
        "Also: `orsgen check DIR [--live]`.",
    )
    p.add_argument(
        "target", help="catalog name (namespace/name), URL, Python file, or DIR/snapshot.json"
    )
    p.add_argument(
        "-o", "--output", required=True, help="package directory to write, e.g. generated/seta"
    )
    p.add_argument("--env-name", help="environment on a server that hosts several")
    p.add_argument(
        "--split", default=None, help="default split for load_tasks and reset (default: train)"
    )
    p.add_argument(
        "--no-task-tools", action="store_true", help="skip probing sessions for task tools"
    )
    p.add_argument(
        "--probe-index",
        type=int,
        action="append",
        default=None,
        metavar="N",
        help="task index to probe for task tools (repeatable; default 0)",
    )
    p.add_argument(
        "--api-key", help="API key (default: OPENREWARD_API_KEY); never written anywhere"
    )
    p.add_argument(
        "--secret",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="per-session secret for probe sessions (repeatable); never written anywhere",
    )
    p.add_argument("--package", help="Python package name (default: from the output directory)")
    p.add_argument("--class-name", help="adapter class name (default: from the environment name)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds for the whole snapshot")
    p.add_argument("--fail-on-warning", action="store_true", help="treat warnings as errors")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.add_argument("--version", action="version", version=f"orsgen {__version__}")
    return p


def _check_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="orsgen check", description="Fail when a generated package is stale."
    )
    p.add_argument("directory", help="generated package directory")
    p.add_argument("-q", "--quiet", action="store_true")
    return p


def _package_section(
    args: argparse.Namespace, environment: dict[str, Any], old: dict[str, Any] | None
) -> dict[str, Any]:
    from orsgen.generate import naming

    previous = dict(old["package"]) if old else {}
    ident = environment.get("identity", {})
    env_label = (
        ident.get("deployment")
        or ident.get("class_name")
        or ident.get("env_name")
        or Path(args.output).name
    )
    package = {
        "name": args.package
        or previous.get("name")
        or naming.package_name(Path(args.output).resolve().name),
        "class_name": args.class_name
        or previous.get("class_name")
        or naming.class_name(str(env_label)),
        "split": args.split
        or previous.get("split")
        or environment.get("task_tools_probe", {}).get("split")
        or "train",
        "version": previous.get("version", "1.0.0"),
    }
    for key in ("include", "exclude"):
        if key in previous:
            package[key] = previous[key]
    return package


def _load_existing(directory: Path) -> dict[str, Any] | None:
    from orsgen.snapshot.model import SnapshotError, load_text

    path = directory / "snapshot.json"
    if not path.is_file():
        return None
    try:
        return load_text(path.read_text(encoding="utf-8"), str(path))
    except SnapshotError:
        return None


def run_generate(argv: Sequence[str]) -> int:
    from orsgen.generate import generate
    from orsgen.snapshot import FetchOptions, TargetError, classify, take
    from orsgen.snapshot.model import SnapshotError, build, dump, load_text
    from orsgen.write import write_package

    args = _generate_parser().parse_args(argv)
    started = time.perf_counter()
    out = Path(args.output)
    secrets = _secrets(args.secret)
    try:
        target = classify(args.target)
        existing = _load_existing(out)
        if target.kind == "snapshot":
            path = Path(target.value)
            if not path.is_file():
                raise UsageError(f"{path}: no such snapshot file")
            stored = load_text(path.read_text(encoding="utf-8"), str(path))
            environment, diagnostics = stored["environment"], list[Diagnostic]()
            existing = existing or stored
            _say(f"regenerating offline from {path}", args.quiet)
        else:
            options = FetchOptions(
                split=args.split or "train",
                task_tools=not args.no_task_tools,
                probe_indices=tuple(args.probe_index or (0,)),
                secrets=secrets,
                timeout=args.timeout,
            )
            environment, diagnostics = take(
                target,
                env_name=args.env_name,
                options=options,
                api_key=args.api_key,
                progress=lambda m: _say(m, args.quiet),
            )
    except (TargetError, SnapshotError, UsageError) as exc:
        _say(f"error: {exc}")
        return EXIT_USAGE
    snapshot = build(environment, _package_section(args, environment, existing))
    result = generate(snapshot)
    diagnostics = [*diagnostics, *result.diagnostics]
    if diagnostics:
        _say(f"{len(diagnostics)} diagnostic(s):", False)
        _print_diagnostics(diagnostics)
    if has_errors(diagnostics):
        _say(f"error: nothing written to {out}; fix the errors above")
        return EXIT_FAIL
    if args.fail_on_warning and diagnostics:
        _say(
            f"error: nothing written to {out}: --fail-on-warning and {len(diagnostics)} warning(s)"
        )
        return EXIT_FAIL
    secret_values = [*(secrets or {}).values(), *([args.api_key] if args.api_key else [])]
    try:
        dump(snapshot, secret_values)
        for text in result.files.values():
            if any(s and s in text for s in secret_values):
                raise SnapshotError("refusing to write generated code that contains a secret value")
    except SnapshotError as exc:
        _say(f"error: {exc}")
        return EXIT_FAIL
    write_package(out, result.files)
    tools = len(snapshot["environment"]["tools"]) + len(snapshot["environment"]["task_tools"])
    _say(
        f"wrote {len(result.files)} files to {out} ({snapshot['package']['class_name']}, {tools} tools, "
        f"version {snapshot['package']['version']}) in {time.perf_counter() - started:.2f} s",
        args.quiet,
    )
    return EXIT_OK


def run_check(argv: Sequence[str]) -> int:
    from orsgen.generate import generate
    from orsgen.snapshot.model import SnapshotError, load_text
    from orsgen.write import read_package

    args = _check_parser().parse_args(argv)
    directory = Path(args.directory)
    path = directory / "snapshot.json"
    if not path.is_file():
        _say(f"error: {path} not found; is {directory} a package generated by orsgen?")
        return EXIT_USAGE
    try:
        snapshot = load_text(path.read_text(encoding="utf-8"), str(path))
    except SnapshotError as exc:
        _say(f"error: {exc}")
        return EXIT_FAIL
    result = generate(snapshot)
    if not result.ok:
        _print_diagnostics(result.diagnostics)
        return EXIT_FAIL
    current = read_package(directory, sorted(result.files))
    stale = 0
    for name, expected in sorted(result.files.items()):
        actual = current[name]
        if actual == expected:
            continue
        stale += 1
        diff = difflib.unified_diff(
            (actual or "").splitlines(keepends=True),
            expected.splitlines(keepends=True),
            fromfile=f"{directory / name} (on disk)" if actual is not None else "/dev/null",
            tofile=f"{directory / name} (from snapshot.json)",
        )
        sys.stdout.writelines(diff)
    if stale:
        _say(
            f"{stale} file(s) in {directory} differ from what snapshot.json generates; "
            f"regenerate with `orsgen {path} -o {directory}`"
        )
        return EXIT_FAIL
    _say(f"{directory} is up to date ({len(result.files)} files)", args.quiet)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # A build tool should neither call home nor echo an in-process server's request log.
    os.environ.setdefault("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
    os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")
    try:
        if argv and argv[0] == "check":
            return run_check(argv[1:])
        return run_generate(argv)
    except UsageError as exc:
        _say(f"error: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say("interrupted")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())

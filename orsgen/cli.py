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
from typing import TYPE_CHECKING, Any

from orsgen import __version__
from orsgen.diagnostics import Diagnostic, has_errors
from orsgen.wording import plural

if TYPE_CHECKING:
    from orsgen.config import PackageConfig

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad arguments or an unusable target: one line on stderr, exit code 2."""


def _say(message: str, quiet: bool = False) -> None:
    if not quiet:
        print(f"orsgen: {message}", file=sys.stderr, flush=True)


def _error(exc: BaseException | str) -> None:
    """An error is one line on stderr, whatever the exception text holds."""
    _say(f"error: {' '.join(str(exc).split())}")


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
        "--split",
        default=None,
        help="default split for load_tasks and reset (default: train, else the only or first split)",
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
    p.add_argument(
        "--toolset",
        metavar="NAME",
        help="bind an SDK harness toolset (e.g. claude-code) in every session; part of the "
        "environment's identity",
    )
    p.add_argument("--package", help="Python package name (default: from the output directory)")
    p.add_argument("--class-name", help="adapter class name (default: from the environment name)")
    p.add_argument("--config", help="config file (default: nearest orsgen.toml or [tool.orsgen])")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds for the whole snapshot")
    p.add_argument("--fail-on-warning", action="store_true", help="treat warnings as errors")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.add_argument("--version", action="version", version=f"orsgen {__version__}")
    return p


def _check_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
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
    p.add_argument("--api-key", help="API key (default: OPENREWARD_API_KEY)")
    p.add_argument("--secret", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("-q", "--quiet", action="store_true")
    return p


def _package_section(
    args: argparse.Namespace,
    environment: dict[str, Any],
    old: dict[str, Any] | None,
    configured: dict[str, Any],
) -> tuple[dict[str, Any], str]:
    """The snapshot's ``package`` section: names, options, and the version, bumped by how the
    environment changed since the snapshot already in the output directory."""
    from orsgen.generate import naming
    from orsgen.versioning import bump, classify

    previous = dict(old["package"]) if old else {}
    ident = environment.get("identity", {})
    label = ident.get("deployment") or ident.get("class_name") or ident.get("env_name")
    label = label or Path(args.output).name
    package: dict[str, Any] = {
        "name": args.package
        or configured.get("package")
        or previous.get("name")
        or naming.package_name(Path(args.output).resolve().name),
        "class_name": args.class_name
        or configured.get("class_name")
        or previous.get("class_name")
        or naming.class_name(str(label)),
        "split": args.split
        or configured.get("split")
        or previous.get("split")
        or environment.get("task_tools_probe", {}).get("split")
        or "train",
    }
    for key in ("include", "exclude", "rename"):
        if key in configured:
            package[key] = configured[key]
        elif key in previous and not configured:
            package[key] = previous[key]
    history = list(previous.get("history") or [])
    report = ""
    if old is None:
        package["version"] = "1.0.0"
        history = [{"version": "1.0.0", "level": "initial", "changes": ["first snapshot"]}]
    else:
        changes = classify(old["environment"], environment)
        report = changes.report()
        package["version"] = bump(str(previous.get("version", "1.0.0")), changes.level)
        if changes.level != "unchanged":
            entry = {
                "version": package["version"],
                "level": changes.level,
                "changes": [c.line() for c in sorted(changes.changes)],
            }
            history = [entry, *history]
    package["history"] = history
    return package, report


def _configured(args: argparse.Namespace, environment: dict[str, Any]) -> dict[str, Any]:
    """Options from the config file for this output directory, checked against the tools."""
    from orsgen import config

    path = config.find(Path.cwd(), Path(args.config) if args.config else None)
    if path is None:
        return {}
    table = config.for_output(path, Path(args.output))
    if table is None:
        return {}
    specs = [*environment.get("tools", []), *environment.get("task_tools", [])]
    problems = config.unknown_tools(table, [str(t["name"]) for t in specs])
    if problems:
        raise config.ConfigError(f"{path}: " + "; ".join(problems))
    recorded = config.record(table)
    for key in ("package", "class_name", "split"):
        value = getattr(table, key)
        if value:
            recorded[key] = value
    return recorded


def _load_existing(directory: Path) -> dict[str, Any] | None:
    from orsgen.snapshot.model import SnapshotError, load_text

    path = directory / "snapshot.json"
    if not path.is_file():
        return None
    try:
        return load_text(path.read_text(encoding="utf-8"), str(path))
    except SnapshotError:
        return None


def _toolset(name: str | None, where: str = "") -> str | None:
    """``--toolset`` or the config file's ``toolset`` (``where`` names it), checked against
    the SDK's built-in harness toolsets."""
    if name is None:
        return None
    from typing import get_args

    from openreward.api.environments.client import (  # type: ignore[import-untyped]
        BuiltinToolset,
    )

    valid = sorted(str(v) for v in get_args(BuiltinToolset))
    if name not in valid:
        raise UsageError(f"{where}unknown toolset {name!r}; valid toolsets: {', '.join(valid)}")
    return name


def _config_table(args: argparse.Namespace) -> tuple[Path | None, PackageConfig | None]:
    """The config file and its table for this output directory (either may be ``None``)."""
    from orsgen import config

    path = config.find(Path.cwd(), Path(args.config) if args.config else None)
    table = config.for_output(path, Path(args.output)) if path is not None else None
    return path, table


def _fetch_options(
    args: argparse.Namespace, secrets: dict[str, str] | None, existing: dict[str, Any] | None
) -> Any:
    from orsgen.snapshot import FetchOptions

    path, table = _config_table(args)
    # Both are checked the same way; the flag wins over the file.
    in_file = _toolset(table.toolset if table is not None else None, f"{path}: toolset: ")
    toolset = _toolset(args.toolset) or in_file
    return FetchOptions(
        split=args.split or (table.split if table is not None else None),
        toolset=toolset,
        task_tools=not args.no_task_tools,
        probe_indices=tuple(args.probe_index) if args.probe_index else None,
        secrets=secrets,
        timeout=args.timeout,
        previous_split=(existing or {}).get("package", {}).get("split"),
    )


def _name_warnings(out: Path, package: str) -> list[Diagnostic]:
    """How the package will be imported, and what its name may shadow."""
    from orsgen.diagnostics import warning
    from orsgen.generate import naming

    notes = [*naming.import_notes(out.resolve(), package), *naming.shadowing_notes(out.resolve())]
    return [warning(None, "", note) for note in notes]


def run_generate(argv: Sequence[str]) -> int:
    from orsgen.config import ConfigError
    from orsgen.generate import generate
    from orsgen.snapshot import TargetError, classify, take
    from orsgen.snapshot.model import SnapshotError, build, dump, load_text
    from orsgen.outdir import OutputDirError, check_output_dir
    from orsgen.write import write_package

    args = _generate_parser().parse_args(argv)
    started = time.perf_counter()
    out = Path(args.output)
    secrets = _secrets(args.secret)
    try:
        # Checked again with the file names once generated; refused early, before a snapshot.
        check_output_dir(out, [])
        target = classify(args.target)
        existing = _load_existing(out)
        diagnostics: list[Diagnostic] = []
        if target.kind == "snapshot":
            path = Path(target.value)
            if not path.is_file():
                raise UsageError(f"{path}: no such snapshot file")
            stored = load_text(path.read_text(encoding="utf-8"), str(path))
            environment = stored["environment"]
            existing = existing or stored
            _say(f"regenerating offline from {path}", args.quiet)
        else:
            environment, diagnostics = take(
                target,
                env_name=args.env_name,
                options=_fetch_options(args, secrets, existing),
                api_key=args.api_key,
                progress=lambda m: _say(m, args.quiet),
            )
        configured = _configured(args, environment)
    except (TargetError, SnapshotError, UsageError, ConfigError, OutputDirError) as exc:
        _error(exc)
        return EXIT_USAGE
    package, report = _package_section(args, environment, existing, configured)
    if report:
        _say(f"changes since the previous snapshot in {out}:\n{report}", args.quiet)
    snapshot = build(environment, package)
    result = generate(snapshot)
    diagnostics = [*diagnostics, *_name_warnings(out, str(package["name"]))]
    diagnostics = [*diagnostics, *result.diagnostics]
    if diagnostics:
        _say(
            f"{plural(len(diagnostics), 'diagnostic')}:", args.quiet and not has_errors(diagnostics)
        )
        _print_diagnostics(diagnostics)
    if has_errors(diagnostics):
        _say(f"error: nothing written to {out}; fix the errors above")
        return EXIT_FAIL
    if args.fail_on_warning and diagnostics:
        _say(
            f"error: nothing written to {out}: --fail-on-warning and "
            f"{plural(len(diagnostics), 'warning')}"
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
    try:
        check_output_dir(out, result.files)
    except OutputDirError as exc:
        _error(exc)
        return EXIT_USAGE
    try:
        write_package(out, result.files)
    except OSError as exc:
        _error(f"cannot write {out}: {exc}; nothing was changed")
        return EXIT_USAGE
    tools = len(snapshot["environment"]["tools"]) + len(snapshot["environment"]["task_tools"])
    _say(
        f"wrote {plural(len(result.files), 'file')} to {out} ({package['class_name']}, "
        f"{plural(tools, 'tool')}, "
        f"version {package['version']}) in {time.perf_counter() - started:.2f} s",
        args.quiet,
    )
    return EXIT_OK


def run_check_live(args: argparse.Namespace, snapshot: dict[str, Any]) -> int:
    """Re-snapshot the recorded (or given) target and classify every difference."""
    from orsgen.snapshot import FetchOptions, TargetError, Target, classify, take
    from orsgen.versioning import WORDS
    from orsgen.versioning import classify as classify_drift

    stored = snapshot["environment"]
    recorded: Any = stored.get("target") or {}
    try:
        if args.target:
            target = classify(args.target)
        elif recorded.get("kind") in ("catalog", "url", "file"):
            target = Target(recorded["kind"], str(recorded["value"]))
        else:
            raise UsageError("the snapshot records no live target; pass --target")
        if target.kind == "file" and not Path(target.value).is_file():
            raise UsageError(f"recorded target {target.value} does not exist here; pass --target")
        probe: Any = stored.get("task_tools_probe") or {}
        recorded_split = probe.get("split") or snapshot["package"].get("split")
        indices: list[Any] = list(probe.get("indices") or [])
        options = FetchOptions(
            split=str(recorded_split) if recorded_split else None,
            task_tools=bool(probe.get("enabled", True)),
            # [] and [0] are what the default probe records; it was not asked for by index.
            probe_indices=None if indices in ([], [0]) else tuple(indices),
            secrets=_secrets(args.secret),
            timeout=args.timeout,
            toolset=stored.get("identity", {}).get("toolset"),
        )
        live, diagnostics = take(
            target,
            env_name=stored.get("identity", {}).get("env_name"),
            options=options,
            api_key=args.api_key,
            progress=lambda m: _say(m, args.quiet),
        )
    except (TargetError, UsageError) as exc:
        _error(exc)
        return EXIT_USAGE
    _print_diagnostics(diagnostics)
    # What the client or the server software is does not change what the model sees.
    live["target"] = stored.get("target")
    drift = classify_drift(stored, live)
    if drift.level == "unchanged":
        _say(f"no drift: the live environment matches {args.directory}/snapshot.json", args.quiet)
        return EXIT_OK
    print(f"drift ({WORDS[drift.level]}, would bump to a {drift.level} version):")
    print(drift.report())
    failing = drift.level == "major" if args.fail_on == "breaking" else True
    if failing:
        _say(
            f"the environment drifted; regenerate with `orsgen {target.value} -o {args.directory}`"
        )
        return EXIT_FAIL
    _say("non-breaking drift only (--fail-on breaking)", args.quiet)
    return EXIT_OK


def run_check(argv: Sequence[str]) -> int:
    from orsgen.generate import generate
    from orsgen.snapshot.model import SnapshotError, load_text
    from orsgen.write import read_package, stray_generated

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
    if args.live:
        return run_check_live(args, snapshot)
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
    for name in stray_generated(directory, result.files):
        stale += 1
        sys.stdout.writelines(
            difflib.unified_diff(
                (directory / name).read_text(encoding="utf-8").splitlines(keepends=True),
                [],
                fromfile=f"{directory / name} (on disk)",
                tofile="/dev/null (no longer generated)",
            )
        )
    if stale:
        _say(
            f"{plural(stale, 'file')} in {directory} "
            f"{'differs' if stale == 1 else 'differ'} from what snapshot.json generates; "
            f"regenerate with `orsgen {path} -o {directory}`"
        )
        return EXIT_FAIL
    _say(f"{directory} is up to date ({plural(len(result.files), 'file')})", args.quiet)
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
        _error(exc)
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say("interrupted")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())

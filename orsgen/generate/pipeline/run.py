"""From a target to a written package in one call (orsgen's library entry point, which the
CLI wraps): snapshot, package section, generate, write atomically. It prints nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from orsgen.generate.pipeline import config
from orsgen.diagnostics import Diagnostic, has_errors, warning
from orsgen.generate import generate, naming
from orsgen.generate.tools import tool_specs
from orsgen.generate.pipeline.outdir import OutputDirError, check_output_dir
from orsgen.generate.pipeline.package_section import Names, package_section
from orsgen.snapshot import TargetError, classify, quiet_sdk, take
from orsgen.snapshot.model import SnapshotError, build, load_text
from orsgen.snapshot.stored import Environment, Snapshot
from orsgen.generate.pipeline.versioning import Classification
from orsgen.generate.pipeline.write import write_package

if TYPE_CHECKING:
    from orsgen.snapshot.fetch import FetchOptions

Progress = Callable[[str], None]
# Why a generated package was not written.
Refusal = Literal["errors", "warnings", "secret in snapshot", "secret in code"]
Level = Literal["initial", "unchanged", "patch", "minor", "major"]


def silent(_: str) -> None:
    """The default progress callback: say nothing."""


class RequestError(Exception):
    """The request cannot be carried out: a bad option, an unusable target, snapshot or
    config file, or an output directory that is in the way or cannot be written. Nothing
    was written; the message says what to do."""


@dataclass(frozen=True)
class Request:
    """What to generate, and where. ``target`` is a catalog name (namespace/name), an
    http(s) URL, a Python file defining ORS environments, or a stored snapshot.json
    (regenerated offline). Every ``None`` is decided as ``orsgen --help`` describes."""

    target: str
    output: Path
    env_name: str | None = None  # on a server that hosts several environments
    split: str | None = None  # the package's default split
    task_tools: bool = True  # probe sessions for task tools
    probe_indices: tuple[int, ...] | None = None  # task indices to probe (default: 0)
    toolset: str | None = None  # an SDK harness toolset every session binds (default: config)
    secrets: Mapping[str, str] | None = field(default=None, repr=False)  # never written
    api_key: str | None = field(default=None, repr=False)  # never written
    package: str | None = None  # Python package name (default: the output directory's)
    class_name: str | None = None  # adapter class name (default: the environment's)
    config: Path | None = None  # default: the nearest orsgen.toml or [tool.orsgen]
    timeout: float = 120.0  # seconds for the whole snapshot
    fail_on_warning: bool = False


@dataclass(frozen=True)
class Result:
    """What a run generated and whether it was written. ``files`` holds every generated
    file (``{name: text}``, all of them written when ``written``); ``diagnostics`` the
    snapshot's, the naming's and the generator's findings, in that order."""

    output: Path
    snapshot: Snapshot
    files: dict[str, str]
    diagnostics: list[Diagnostic]
    changes: Classification | None  # since the package already in ``output``; None: new
    refused: Refusal | None
    # What the user should know that is not a finding about the package (see _loopback_note).
    notes: tuple[str, ...] = ()

    @property
    def written(self) -> bool:
        return self.refused is None

    @property
    def package(self) -> str:
        return self.snapshot.package.name

    @property
    def class_name(self) -> str:
        return self.snapshot.package.class_name

    @property
    def version(self) -> str:
        return self.snapshot.package.version

    @property
    def level(self) -> Level:
        """How the version was bumped: ``initial`` for a new package."""
        return "initial" if self.changes is None else self.changes.level

    @property
    def tool_count(self) -> int:
        """The tools the package has (what its configuration selects)."""
        return len(tool_specs(self.snapshot.environment, self.snapshot.package))


# The environment, the snapshot's findings, the snapshot in the output and the config table.
_Inputs = tuple[Environment, list[Diagnostic], Snapshot | None, config.PackageConfig | None]


def run(request: Request, progress: Progress = silent) -> Result:
    """Snapshot (or read a stored snapshot), name, version, generate, write atomically. A
    request it cannot carry out raises :class:`RequestError` with nothing written; a package
    that must not be written comes back with ``refused`` set."""
    quiet_sdk()
    environment, found, previous, configured = _inputs(request, progress)
    names = Names(request.package, request.class_name, request.split)
    section = package_section(environment, request.output, names, configured, previous)
    report = section.changes.report() if section.changes is not None else ""
    if report:
        progress(f"changes since the previous snapshot in {request.output}:\n{report}")
    snapshot = build(environment, section.package)
    generated = generate(snapshot)
    where = request.output.resolve()
    said = [*naming.import_notes(where, section.package.name), *naming.shadowing_notes(where)]
    diagnostics = [*found, *(warning(None, "", n) for n in said), *generated.diagnostics]
    refused = _refusal(request, diagnostics, generated.files)
    if refused is None:
        _write(request.output, generated.files)
    note = _loopback_note(environment, previous)
    notes = (note,) if note else ()
    return Result(
        request.output, snapshot, generated.files, diagnostics, section.changes, refused, notes
    )


def _loopback_note(environment: Environment, previous: Snapshot | None) -> str | None:
    """A loopback default server works on this machine only: said when it becomes the default,
    and not a diagnostic (``--fail-on-warning`` must not refuse a local server)."""
    url = environment.default_url
    if url is None or not is_loopback(url):
        return None
    if previous is not None and previous.environment.default_url == url:
        return None
    return (
        f"the package's default server is {url}, a loopback address that only this machine "
        "reaches; where training runs elsewhere, pass base_url=... (or set "
        "OPENREWARD_SESSION_URL) to load_tasks() and the adapter"
    )


def is_loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine (``localhost``, ``127.0.0.0/8``, ``::1``, ``0.0.0.0``)."""
    import ipaddress
    from urllib.parse import urlparse

    host = urlparse(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _inputs(request: Request, progress: Progress) -> _Inputs:
    if not 0 < request.timeout < float("inf"):  # before any network, as the CLI checks it
        raise RequestError(f"timeout must be a positive number of seconds, not {request.timeout}")
    try:
        # Checked again with the file names once generated; refused early, before a snapshot.
        check_output_dir(request.output, [])
        target = classify(request.target)
        previous = _stored_in(request.output)
        diagnostics: list[Diagnostic] = []
        if target.kind == "snapshot":
            path = Path(target.value)
            if not path.is_file():
                raise RequestError(f"{path}: no such snapshot file")
            stored = load_text(path.read_text(encoding="utf-8"), str(path))
            environment = stored.environment
            previous = previous or stored
            progress(f"regenerating offline from {path}")
            table = config.for_output(request.output, request.config)
        else:
            table = config.for_output(request.output, request.config)
            options = fetch_options(request, table, previous)
            environment, diagnostics = take(
                target,
                env_name=request.env_name,
                options=options,
                api_key=request.api_key,
                progress=progress,
            )
        configured = _configured(table, environment)
    except (TargetError, SnapshotError, config.ConfigError, OutputDirError) as exc:
        raise RequestError(str(exc)) from exc
    return environment, diagnostics, previous, configured


def fetch_options(
    request: Request,
    configured: tuple[Path, config.PackageConfig] | None = None,
    previous: Snapshot | None = None,
) -> FetchOptions:
    """How to snapshot, for generation and ``check --live`` (the request wins over the file)."""
    from orsgen.snapshot.fetch import FetchOptions

    path, table = configured if configured is not None else (None, None)
    in_file = _checked_toolset(table.toolset if table is not None else None, f"{path}: toolset: ")
    return FetchOptions(
        split=request.split or (table.split if table is not None else None),
        toolset=_checked_toolset(request.toolset) or in_file,
        task_tools=request.task_tools,
        probe_indices=request.probe_indices,
        secrets=request.secrets,
        timeout=request.timeout,
        previous_split=previous.package.split if previous is not None else None,
    )


def _checked_toolset(name: str | None, where: str = "") -> str | None:
    """A toolset checked against the SDK's harness toolsets (``where``: its config file)."""
    if name is None:
        return None
    from typing import get_args

    from openreward.api.environments.client import BuiltinToolset  # type: ignore[import-untyped]

    valid = sorted(str(v) for v in get_args(BuiltinToolset))
    if name not in valid:
        raise RequestError(f"{where}unknown toolset {name!r}; valid toolsets: {', '.join(valid)}")
    return name


def _configured(
    table: tuple[Path, config.PackageConfig] | None, environment: Environment
) -> config.PackageConfig | None:
    if table is None:
        return None
    path, package = table
    problems = config.unknown_tools(package, [t.name for t in environment.all_tools])
    if problems:
        raise config.ConfigError(f"{path}: " + "; ".join(problems))
    return package


def _stored_in(directory: Path) -> Snapshot | None:
    """The snapshot in ``directory``, if readable (the output check decides the rest)."""
    path = directory / "snapshot.json"
    if not path.is_file():
        return None
    try:
        return load_text(path.read_text(encoding="utf-8"), str(path))
    except SnapshotError:
        return None


def _refusal(
    request: Request, diagnostics: list[Diagnostic], files: Mapping[str, str]
) -> Refusal | None:
    if has_errors(diagnostics):
        return "errors"
    if request.fail_on_warning and diagnostics:
        return "warnings"
    secrets = [*(request.secrets or {}).values(), *([request.api_key] if request.api_key else [])]
    return secret_leak(files, secrets)


def secret_leak(files: Mapping[str, str], secrets: Iterable[str]) -> Refusal | None:
    """Whether any secret value turns up in the files to write (the snapshot is one)."""
    values = [s for s in secrets if s]
    leaked = {name for name, text in files.items() if any(s in text for s in values)}
    if "snapshot.json" in leaked:
        return "secret in snapshot"
    return "secret in code" if leaked else None


def _write(output: Path, files: Mapping[str, str]) -> None:
    try:
        check_output_dir(output, files)
    except OutputDirError as exc:
        raise RequestError(str(exc)) from exc
    try:
        write_package(output, files)
    except OSError as exc:
        raise RequestError(f"cannot write {output}: {exc}; nothing was changed") from exc

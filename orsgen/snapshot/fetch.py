"""Read an environment's facts over ORS: identity, versions, splits, task counts and tools."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp

from orsgen.canonical import spec_dict
from orsgen.diagnostics import Diagnostic, warning
from orsgen.jsonobject import as_array, as_object, is_object
from orsgen.runtime.errors import describe
from orsgen.runtime.transport.endpoint import Endpoint, session_secrets
from orsgen.runtime.transport.process import current
from orsgen.runtime.transport.sdk import environment, is_authentication_error, session_class
from orsgen.snapshot.errors import TargetError
from orsgen.snapshot.probes import merge_probed, prompt_has_image, short
from orsgen.snapshot.retries import ask
from orsgen.snapshot.splits import choose_split
from orsgen.wording import plural
from orsgen.snapshot.stored import (
    Environment,
    Identity,
    Images,
    Split,
    TargetRef,
    TaskToolsProbe,
    TerminalTool,
    ToolSpec,
)

Progress = Callable[[str], None]


@dataclass
class FetchOptions:
    """``None`` for ``split`` or ``probe_indices``: the default (``choose_split``; task 0)."""

    split: str | None = None
    task_tools: bool = True
    probe_indices: Sequence[int] | None = None
    secrets: Mapping[str, str] | None = field(default=None, repr=False)
    timeout: float = 120.0
    previous_split: str | None = None
    # An SDK harness toolset the probe sessions bind (``--toolset``); part of the identity.
    toolset: str | None = None


@dataclass(frozen=True)
class Provenance:
    """What a snapshot records besides what the server says: the target it stands for and
    class names (the server reports only lower-cased names)."""

    target: TargetRef
    class_names: Mapping[str, str] = field(default_factory=dict[str, str])
    class_name: str | None = None


def _unique(
    specs: list[dict[str, Any]], where: str, diagnostics: list[Diagnostic]
) -> list[dict[str, Any]]:
    """A server listing one name twice keeps the first, with a warning (never a silent drop)."""
    seen: dict[str, dict[str, Any]] = {}
    for spec in specs:
        name = spec["name"]
        if name in seen:
            diagnostics.append(warning(name, "", f"listed twice in {where}; keeping the first"))
        seen.setdefault(name, spec)
    return sorted(seen.values(), key=lambda t: t["name"])


async def _choose_env_name(
    endpoint: Endpoint, requested: str | None, progress: Progress
) -> tuple[str | None, list[str]]:
    env = await environment(endpoint)
    try:
        listing = await ask(endpoint, env, "GET", "/list_environments", progress=progress)
        names = [str(n) for n in listing]
    except Exception as exc:  # noqa: BLE001
        if is_authentication_error(exc):  # the SDK's 401, with a multi-line banner
            raise TargetError(
                f"the server at {endpoint.session_url} rejected the API key (HTTP 401); "
                "set OPENREWARD_API_KEY or pass --api-key"
            ) from None
        if endpoint.deployment is not None and isinstance(exc, aiohttp.ClientResponseError):
            # The platform answered but may not expose the listing; address the deployment.
            return requested, []
        # The runtime's wording ("connection refused (is the server running?)"), not aiohttp's.
        raise TargetError(f"cannot reach an ORS server at {endpoint.session_url}: {describe(exc)}")
    if requested is not None:
        if requested.lower() not in names:
            raise TargetError(
                f"unknown environment {requested!r} at {endpoint.session_url}; "
                f"it hosts: {', '.join(names) or '(none)'}"
            )
        return requested.lower(), names
    if len(names) == 1:
        return names[0], names
    if not names:
        raise TargetError(f"the ORS server at {endpoint.session_url} hosts no environments")
    raise TargetError(
        f"the ORS server at {endpoint.session_url} hosts several environments: "
        f"{', '.join(names)}; choose one with --env-name"
    )


@dataclass
class _Probe:
    task_tools: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    indices: list[int] = field(default_factory=list[int])
    diagnostics: list[Diagnostic] = field(default_factory=list[Diagnostic])
    # Whether any probed prompt held an image (``None``: no prompt could be read).
    images: bool | None = None
    # The task tools each probed task offered, by task index (what the drift guard expects).
    offered: dict[int, list[str]] = field(default_factory=dict[int, list[str]])

    def tools_by_task(self) -> dict[str, dict[str, list[str]]]:
        if not self.indices:
            return {}
        names = {t["name"] for t in self.task_tools}
        by_task = {str(i): sorted(set(self.offered.get(i, [])) & names) for i in self.indices}
        return {"tools_by_task": by_task}


async def _facts(
    endpoint: Endpoint, options: FetchOptions, provenance: Provenance, progress: Progress
) -> tuple[Environment, list[Diagnostic]]:
    diagnostics: list[Diagnostic] = []
    env = await environment(endpoint)
    progress("reading server version and tools")
    version = await _server_version(endpoint, env, progress)
    listed = as_object(
        await ask(endpoint, env, "GET", endpoint.env_path("/tools"), progress=progress)
    )
    shared = _unique([spec_dict(t) for t in listed.get("tools", [])], "/tools", diagnostics)
    progress("reading splits and task counts")
    splits = await _read_splits(endpoint, env, progress)
    # Chosen with or without probes: the split becomes the package's default.
    chosen, why = choose_split([s.name for s in splits], options.split, options.previous_split)
    if why:
        progress(why)
    options = replace(options, split=chosen)
    splits.sort(key=lambda s: s.name)
    probe = _Probe()
    if options.task_tools or options.toolset:
        probe = await _probe_task_tools(endpoint, env, options, splits, shared, progress)
        diagnostics += probe.diagnostics
    if options.toolset:  # the bound toolset's tools replace same-named environment tools
        overridden = {t["name"] for t in probe.task_tools}
        shared = [t for t in shared if t["name"] not in overridden]
    env_name = endpoint.env_name
    identity = Identity(env_name=env_name, deployment=endpoint.deployment)
    class_name = provenance.class_names.get(str(env_name)) or provenance.class_name
    if class_name:  # a local file tells us the class name the server lower-cased
        identity = identity.model_copy(update={"class_name": class_name})
    if options.toolset:
        identity = identity.model_copy(update={"toolset": options.toolset})
    facts = Environment(
        identity=identity,
        images=Images(in_prompt=probe.images),
        target=provenance.target,
        server_version=version,
        sdk_version=importlib.metadata.version("openreward"),
        splits=splits,
        tools=[ToolSpec.model_validate(t) for t in shared],
        task_tools=[ToolSpec.model_validate(t) for t in probe.task_tools],
        task_tools_probe=TaskToolsProbe(
            enabled=options.task_tools or bool(options.toolset),
            split=options.split,
            indices=probe.indices,
            **probe.tools_by_task(),
        ),
        terminal_tool=_terminal_tool(listed.get("terminal_tool")),
        supports_score_group=bool(listed.get("supports_score_group")),
        message_block_types=sorted(str(t) for t in as_array(listed.get("message_block_types"))),
    )
    return facts, diagnostics


async def _server_version(endpoint: Endpoint, env: Any, progress: Progress) -> str | None:
    try:
        version = await ask(endpoint, env, "GET", "/version", progress=progress)
    except Exception:  # noqa: BLE001 - optional endpoint
        return None
    said = version.get("version") if is_object(version) else None
    return None if said is None else str(said)


async def _read_splits(endpoint: Endpoint, env: Any, progress: Progress) -> list[Split]:
    splits: list[Split] = []
    for split in await ask(endpoint, env, "GET", endpoint.env_path("/splits"), progress=progress):
        name = split["name"] if is_object(split) else str(split)
        kind = split.get("type") if is_object(split) else None
        path = endpoint.env_path("/num_tasks")
        answer = await ask(endpoint, env, "POST", path, {"split": name}, progress=progress)
        splits.append(Split(name=str(name), type=kind, num_tasks=int(answer["num_tasks"])))
    return splits


def _terminal_tool(said: Any) -> TerminalTool | None:
    # Only the fields a snapshot stores, none a newer server adds.
    if not is_object(said):
        return None
    return TerminalTool.model_validate({k: said[k] for k in TerminalTool.model_fields if k in said})


async def _probe_task_tools(
    endpoint: Endpoint,
    env: Any,
    options: FetchOptions,
    splits: list[Split],
    shared: list[dict[str, Any]],
    progress: Progress,
) -> _Probe:
    """One short session per probe index, tool lists merged by name as TRL's bridge does."""
    # choose_split checked that the split exists; a server listing it twice counts once.
    total = next(s.num_tasks for s in splits if s.name == options.split)
    if options.probe_indices is None and total == 0:
        # As TRL's bridge does: no task to open a session on, so the shared tools only.
        note = (
            f"split {options.split!r} has no tasks, so no session could be opened to look for "
            "task tools; the package has the shared tools only. Regenerate once the split "
            "has tasks, or pass --no-task-tools to skip the probe"
        )
        return _Probe(diagnostics=[warning(None, "", note)])
    probe = _Probe(indices=_probe_indices(options, total))
    secrets = session_secrets(endpoint, options.secrets)
    # With a toolset bound, its tools override same-named shared ones: the session decides.
    seen: dict[str, tuple[dict[str, Any], int]] = (
        {} if options.toolset else {t["name"]: (t, -1) for t in shared}
    )
    merged: dict[str, dict[str, Any]] = {}
    for index in probe.indices:
        progress(f"probing task tools with a session on task {index}")
        # The runtime's session class: its first keepalive ping waits an interval, so a short
        # probe never pings a session it deleted (the SDK's pings at once; the server logs 404).
        async with session_class()(
            env,
            secrets=secrets,
            api_key=env.api_key,
            split=options.split,
            index=index,
            toolset_name=options.toolset,
        ) as session:
            listed = [spec_dict(s) for s in await session.list_tools()]
            seen_image = await prompt_has_image(session, index, probe.diagnostics)
        if seen_image is not None:
            probe.images = bool(probe.images) or seen_image
        specs = _unique(listed, f"/task_tools of task {index}", probe.diagnostics)
        probe.offered[index] = [s["name"] for s in specs]
        merge_probed(specs, index, seen, merged, probe.diagnostics)
    if options.toolset:  # a toolset's tools are session tools even where they shadow shared ones
        shared_specs = {t["name"]: t for t in shared}
        merged = {n: t for n, t in merged.items() if shared_specs.get(n) != t}
    probe.task_tools = [merged[n] for n in sorted(merged)]
    if options.probe_indices is None and total > 1:  # the other tasks were never asked
        progress(
            f"{plural(len(shared), 'shared tool')} + {plural(len(merged), 'task tool')} from "
            f"the probe of task 0 of {total}; task tools that only other tasks offer need "
            "--probe-index N"
        )
    return probe


def _probe_indices(options: FetchOptions, total: int) -> list[int]:
    indices = sorted(set(options.probe_indices or (0,)))
    bad = [i for i in indices if not 0 <= i < total]
    if bad:
        raise TargetError(
            f"probe index {bad[0]} is out of range for split {options.split!r} ({total} tasks); "
            "choose another with --probe-index, or pass --no-task-tools"
        )
    return indices


def fetch(
    endpoint: Endpoint,
    requested_env: str | None,
    options: FetchOptions,
    provenance: Provenance,
    progress: Progress,
) -> tuple[Environment, list[Diagnostic]]:
    import time

    deadline = time.monotonic() + options.timeout
    progress(f"connecting to {endpoint.deployment or 'the ORS server'} at {endpoint.session_url}")
    try:
        name, _ = current().run(
            _choose_env_name(endpoint, requested_env, progress), timeout=options.timeout
        )
        endpoint = replace(endpoint, env_name=name)
        # Reported once the server answered, so a target that fails prints its error alone.
        progress(f"connected to {endpoint.label}")
        remaining = max(deadline - time.monotonic(), 0.001)  # --timeout bounds the whole snapshot
        return current().run(_facts(endpoint, options, provenance, progress), timeout=remaining)
    except TargetError:
        raise
    except TimeoutError as exc:
        raise TargetError(f"{endpoint.label}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - every transport failure becomes one line
        raise TargetError(f"{endpoint.label}: {short(exc)}") from None

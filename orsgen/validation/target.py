"""TARGET as ``orsgen validate`` takes it, reached; its facts (splits, task counts, tools)
are read as the snapshotter reads them."""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from orsgen.runtime.transport.endpoint import Endpoint
from orsgen.snapshot import Target, TargetError, classify, live_endpoint, recorded_target
from orsgen.snapshot.stored import Environment
from orsgen.snapshot.targets import Kind


@dataclass(frozen=True)
class Live:
    """A reachable environment: where it is, and what it says about itself."""

    endpoint: Endpoint
    environment: Environment
    target: str  # as validation.json records it (no credentials, no query)


def public(text: str) -> str:
    """A target as written down: a URL without credentials or a query."""
    if "://" not in text:
        return text
    parts = urllib.parse.urlsplit(text)
    netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _package(directory: Path, base_url: str | None) -> tuple[Target, str | None, str]:
    """A generated package's target and environment name: its server at ``base_url``, or
    the target its snapshot recorded when that was a URL or a catalog name."""
    from orsgen.snapshot.model import SnapshotError, load_text

    path = directory / "snapshot.json"
    try:
        snapshot = load_text(path.read_text(encoding="utf-8"), str(path))
    except (OSError, SnapshotError) as exc:
        raise TargetError(f"{directory}: cannot read its snapshot.json: {exc}") from None
    facts = snapshot.environment
    name = facts.identity.env_name
    if base_url is not None:
        return Target("url", base_url.rstrip("/")), name, f"{directory} at {public(base_url)}"
    recorded = facts.target
    if recorded is not None and recorded.kind in ("url", "catalog"):
        kind: Kind = "url" if recorded.kind == "url" else "catalog"
        return Target(kind, recorded.value), name, f"{directory} at {recorded.value}"
    raise TargetError(
        f"{directory} was generated from a local file and records no server; give the "
        "server with --base-url URL"
    )


@contextmanager
def connect(
    text: str,
    *,
    env_name: str | None,
    base_url: str | None,
    api_key: str | None,
    secrets: Mapping[str, str] | None,
    toolset: str | None,
    timeout: float,
    progress: Callable[[str], None],
) -> Generator[Live, None, None]:
    """The environment ``text`` names, reachable for the block (:class:`TargetError`, one
    line, when it is not)."""
    from orsgen.snapshot.fetch import FetchOptions, Provenance, fetch

    label = public(text)
    if (Path(text) / "snapshot.json").is_file():
        target, recorded_name, label = _package(Path(text), base_url)
        env_name = env_name or recorded_name
    else:
        if base_url is not None:
            raise TargetError(
                "--base-url takes a generated package directory as TARGET; give the URL itself "
                "as TARGET"
            )
        target = classify(text)  # a snapshot: live_endpoint refuses it
    titles: dict[str, str] = {}
    with live_endpoint(target, api_key, titles) as endpoint:
        if target.kind == "file":
            progress(f"serving {target.value} in this process")
        options = FetchOptions(
            task_tools=bool(toolset), secrets=secrets, timeout=timeout, toolset=toolset
        )
        facts, _ = fetch(
            endpoint, env_name, options, Provenance(recorded_target(target), titles), progress
        )
        endpoint = replace(endpoint, env_name=facts.identity.env_name)
        yield Live(endpoint, facts, label)

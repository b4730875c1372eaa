"""Snapshotting: the only part of orsgen that talks to the network, imported on first use
so ``orsgen.snapshot.model`` (which the generator reads) loads no network code."""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from orsgen.diagnostics import Diagnostic
from orsgen.snapshot.errors import TargetError
from orsgen.snapshot.targets import Target, classify

if TYPE_CHECKING:
    from orsgen.runtime.transport.endpoint import Endpoint
    from orsgen.snapshot.fetch import FetchOptions
    from orsgen.snapshot.stored import Environment, TargetRef

__all__ = ["Target", "TargetError", "classify", "live_endpoint", "quiet_sdk", "take"]


def quiet_sdk() -> None:
    """No update check, no request log (set before the SDK is imported; the caller's win)."""
    os.environ.setdefault("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
    os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")


@contextmanager
def live_endpoint(
    target: Target, api_key: str | None, titles: dict[str, str]
) -> Generator[Endpoint, None, None]:
    """The endpoint of a live ``target`` for the block (a Python file is served on loopback
    until it ends; ``titles`` gets each served name's class name)."""
    from orsgen.runtime.transport.endpoint import resolve

    if target.kind == "file":
        from orsgen.snapshot.local import serve_file

        with serve_file(Path(target.value)) as (url, served):
            titles.update(served)
            yield resolve(base_url=url, api_key=api_key or "")
    elif target.kind == "url":
        yield resolve(base_url=target.value, api_key=api_key)
    elif target.kind == "catalog":
        key = api_key if api_key is not None else os.environ.get("OPENREWARD_API_KEY")
        if not key:
            raise TargetError(
                f"catalog target {target.value!r} needs an API key: set OPENREWARD_API_KEY or pass --api-key"
            )
        yield resolve(base_url=None, api_key=key, deployment=target.value)
    else:
        raise TargetError(f"{target.value!r} is a snapshot, not a live target")


def recorded_target(target: Target) -> TargetRef:
    """How a snapshot records ``target``: a file, never the random-port URL it was served on."""
    from orsgen.snapshot.stored import TargetRef

    value = Path(target.value).as_posix() if target.kind == "file" else target.value
    return TargetRef(kind=target.kind, value=value)


def take(
    target: Target,
    *,
    env_name: str | None,
    options: FetchOptions,
    api_key: str | None = None,
    progress: Callable[[str], None] = lambda _: None,
    record_as: TargetRef | None = None,
    class_name: str | None = None,
) -> tuple[Environment, list[Diagnostic]]:
    """The typed ``environment`` section of a live target, and diagnostics."""
    from orsgen.snapshot.fetch import Provenance, fetch

    titles: dict[str, str] = {}
    with live_endpoint(target, api_key, titles) as endpoint:
        if target.kind == "file":  # once it imported: a bad file's error is the only line
            progress(f"serving {target.value} in this process for the snapshot")
        provenance = Provenance(record_as or recorded_target(target), titles, class_name)
        return fetch(endpoint, env_name, options, provenance, progress)

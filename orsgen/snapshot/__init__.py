"""Snapshotting: the only part of orsgen that talks to the network.

The network code (the fetcher and the runtime's connection module) is imported on
first use, so ``orsgen.snapshot.model`` (the stored file, which the generator reads)
loads no network code.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orsgen.diagnostics import Diagnostic
from orsgen.snapshot.errors import TargetError
from orsgen.snapshot.targets import Target, classify

if TYPE_CHECKING:
    from orsgen.runtime.endpoint import Endpoint
    from orsgen.snapshot.fetch import FetchOptions

__all__ = ["FetchOptions", "Target", "TargetError", "classify", "take"]


def __getattr__(name: str) -> Any:
    if name == "FetchOptions":
        from orsgen.snapshot.fetch import FetchOptions

        return FetchOptions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@contextmanager
def _endpoint(
    target: Target, api_key: str | None, titles: dict[str, str]
) -> Generator[Endpoint, None, None]:
    if target.kind == "file":
        from orsgen.snapshot.local import serve_file

        with serve_file(Path(target.value)) as (url, served):
            titles.update(served)
            yield _resolved(base_url=url, api_key=api_key or "")
        return
    if target.kind == "url":
        yield _resolved(base_url=target.value, api_key=api_key)
        return
    if target.kind == "catalog":
        key = api_key if api_key is not None else os.environ.get("OPENREWARD_API_KEY")
        if not key:
            raise TargetError(
                f"catalog target {target.value!r} needs an API key: set OPENREWARD_API_KEY or pass --api-key"
            )
        yield _resolved(base_url=None, api_key=key, deployment=target.value)
        return
    raise TargetError(f"{target.value!r} is a snapshot, not a live target")


def _resolved(
    *, base_url: str | None, api_key: str | None, deployment: str | None = None
) -> Endpoint:
    """The endpoint of a snapshot target: a URL or a deployment, never a recorded default."""
    from orsgen.runtime.endpoint import resolve

    return resolve(
        base_url=base_url,
        api_key=api_key,
        env_name=None,
        deployment=deployment,
        default_url=None,
        default_env_name=None,
    )


def take(
    target: Target,
    *,
    env_name: str | None,
    options: FetchOptions,
    api_key: str | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> tuple[dict[str, Any], list[Diagnostic]]:
    """Snapshot a live target; returns the ``environment`` section and diagnostics."""
    from orsgen.snapshot.fetch import fetch

    titles: dict[str, str] = {}
    with _endpoint(target, api_key, titles) as endpoint:
        if target.kind == "file":  # once it imported: a bad file's error is the only line
            progress(f"serving {target.value} in this process for the snapshot")
        facts, diagnostics = fetch(endpoint, env_name, options, progress)
    # Imported late: importing the SDK takes seconds, and a bad target should fail fast.
    from openreward._version import __version__ as sdk_version  # type: ignore[import-untyped]

    # A local file tells us the class name the server lower-cased.
    title = titles.get(str(facts["identity"].get("env_name")))
    if title:
        facts["identity"]["class_name"] = title
    # A local file's URL has a random port; recording it would make snapshots unstable.
    facts["target"] = {
        "kind": target.kind,
        "value": Path(target.value).as_posix() if target.kind == "file" else target.value,
    }
    facts["sdk_version"] = sdk_version
    return facts, diagnostics

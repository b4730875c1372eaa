"""Where an adapter connects, from constructor keywords, the ``OPENREWARD_*`` environment
variables and the snapshot. Pure: no network I/O, no state.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse, urlunparse

from orsgen.runtime.errors import ServerNotConfiguredError

DEFAULT_PLATFORM_URL = "https://openreward.ai"


@dataclass(frozen=True)
class Endpoint:
    """A resolved ORS endpoint. The API key is kept out of ``repr`` so it never reaches a log."""

    session_url: str
    api_url: str
    env_name: str | None
    deployment: str | None
    api_key: str = field(default="", repr=False)

    @property
    def label(self) -> str:
        """A human-readable, secret-free description for error messages."""
        who = self.deployment or self.env_name or "<default environment>"
        return f"{who} at {self.session_url}"

    def env_path(self, path: str) -> str:
        """``path`` under this environment's own prefix (``/NAME/tools``) when one is named."""
        return f"/{self.env_name}{path}" if self.env_name else path


def _with_subdomain(url: str, sub: str) -> str:
    parsed = urlparse(url)
    return urlunparse(parsed._replace(netloc=f"{sub}.{parsed.netloc}"))


def resolve(
    *,
    base_url: str | None,
    api_key: str | None,
    env_name: str | None = None,
    deployment: str | None = None,
    default_url: str | None = None,
    default_env_name: str | None = None,
) -> Endpoint:
    """Resolve an endpoint the way the openreward SDK does, with explicit keywords first (the
    order: docs/internals.md, "Which server"). A ``base_url`` is one ORS server for sessions
    and API calls alike; with neither a URL nor a deployment there is no server to guess."""
    key = api_key if api_key is not None else os.environ.get("OPENREWARD_API_KEY", "")
    name = env_name or default_env_name
    url = base_url
    if url is None and deployment is None:
        url = os.environ.get("OPENREWARD_SESSION_URL") or default_url
    if url is not None:
        url = url.rstrip("/")
        return Endpoint(session_url=url, api_url=url, env_name=name, deployment=None, api_key=key)
    if deployment is None:
        raise ServerNotConfiguredError(
            f"no ORS server to connect to for environment {name or '<default>'!r}: the "
            "package records no server URL (it was generated from a local file). Pass "
            "base_url='http://HOST:PORT' (for a trainer: functools.partial(Env, "
            "base_url=...)) or set OPENREWARD_SESSION_URL."
        )
    platform = os.environ.get("OPENREWARD_URL", DEFAULT_PLATFORM_URL)
    session_url = os.environ.get("OPENREWARD_SESSION_URL") or _with_subdomain(platform, "sessions")
    api_url = os.environ.get("OPENREWARD_API_URL") or _with_subdomain(platform, "api")
    return Endpoint(session_url.rstrip("/"), api_url.rstrip("/"), name, deployment, key)


def resolve_all(
    *,
    base_url: str | Sequence[str] | None,
    api_key: str | None,
    env_name: str | None,
    deployment: str | None,
    default_url: str | None,
    default_env_name: str | None,
) -> tuple[Endpoint, ...]:
    """:func:`resolve` for each URL when ``base_url`` is a sequence; one endpoint otherwise."""
    rest = {
        "api_key": api_key,
        "env_name": env_name,
        "deployment": deployment,
        "default_url": default_url,
        "default_env_name": default_env_name,
    }
    if base_url is None or isinstance(base_url, str):
        return (resolve(base_url=base_url, **rest),)
    urls: list[object] = list(base_url)
    if not urls:
        raise ValueError("base_url is an empty sequence: name at least one ORS server URL")
    bad = [u for u in urls if not isinstance(u, str)]
    if bad:
        raise TypeError(f"base_url must hold URL strings, got {bad[0]!r}")
    found = tuple(resolve(base_url=str(u), **rest) for u in urls)
    seen = [e.session_url for e in found]
    twice = sorted({u for u in seen if seen.count(u) > 1})
    if twice:
        raise ValueError(f"base_url names {twice[0]} more than once")
    return found


def session_secrets(endpoint: Endpoint, secrets: Mapping[str, str] | None) -> dict[str, Any] | None:
    """Per-session secrets in the form the SDK accepts; on a catalog deployment with none
    given, the API key (most platform environments need it)."""
    if secrets is None:
        forward = endpoint.deployment is not None and endpoint.api_key
        return {"api_key": endpoint.api_key} if forward else None
    if not secrets:
        return {}
    # The SDK takes a plain string only for a name in its WELL_KNOWN_SECRETS (with the domains
    # a sandbox may send it to); any other name goes as (value, ()): no egress domain for it.
    from openreward.api.sandboxes.secrets import WELL_KNOWN_SECRETS  # type: ignore[import-untyped]

    return {
        str(name): value if name in WELL_KNOWN_SECRETS else (value, ())
        for name, value in secrets.items()
    }

"""The environment's options, as ``orsgen eval`` and ``orsgen replay`` take them
(``--base-url``, ``--api-key``, ``--secret``, ``--env-class``), and the adapter's
:class:`~orsgen.AdapterConfig` they make (no network; no key or secret is ever written)."""

from __future__ import annotations

import argparse
from typing import Any

from orsgen.arguments import Parser, UsageError, http_url, secret_pairs


def environment_options(p: Parser) -> None:
    """The environment's options, as ``orsgen eval`` and ``orsgen replay`` take them."""
    p.add_argument(
        "--base-url",
        type=http_url,
        action="append",
        help="ORS server URL (repeat for several; default: the package's, else "
        "OPENREWARD_SESSION_URL)",
    )
    p.add_argument("--api-key", help="ORS API key (default: OPENREWARD_API_KEY); never written")
    p.add_argument(
        "--secret",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="per-session secret (repeatable); never written",
    )
    p.add_argument("--env-class", help="the adapter class, when the package has several")


def adapter_config(args: argparse.Namespace, klass: Any, package: str, **settings: Any) -> Any:
    """The :class:`~orsgen.AdapterConfig` of :func:`environment_options` and ``settings`` for
    the adapter class ``klass`` of ``package`` (no network, no group prefetch)."""
    from orsgen.runtime.config import AdapterConfig

    urls: list[str] = args.base_url or []
    try:
        adapter = AdapterConfig.of(
            klass,
            base_url=urls[0] if len(urls) == 1 else urls or None,
            api_key=args.api_key,
            secrets=secret_pairs(args.secret),
            prefetch=False,
            **settings,
        )
    except ValueError as exc:  # several --base-url naming one server
        raise UsageError(f"--base-url: {exc}") from None
    if adapter.no_server is not None:
        raise UsageError(
            f"{package} records no ORS server URL (it was generated from a local file): "
            "give one with --base-url URL or set OPENREWARD_SESSION_URL"
        )
    return adapter

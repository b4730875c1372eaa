"""The openreward versions orsgen is tested with, and a check, once per process, that the SDK
has what :mod:`orsgen.runtime.transport.sdk` uses beyond its public surface (docs/internals.md,
"The oldest versions"). ``USES`` is that module's inventory: ``Class.attribute``, and
``function(keyword)`` for a keyword it passes.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
import logging
import re

log = logging.getLogger("orsgen.runtime")

# pyproject's ``openreward>=0.1.160,<0.2`` (why these: docs/internals.md).
FLOOR, CEILING = "0.1.160", "0.2"
RANGE = f"openreward>={FLOOR},<{CEILING}"

USES: dict[str, tuple[str, ...]] = {
    "openreward.api.environments.client": (
        "AsyncEnvironment",
        "AsyncSession.__aenter__",
        "AsyncSession._env_path",
        "AsyncSession._mark_dead",
        "AsyncSession._run_or_die",
        "AsyncSession._run_ping",
        "AsyncSession.score_group",
        "ErrorResponse",
        "Message",
        "Task",
        "TextBlock",
        "ToolCallError",
        "ToolFailed",
        "ToolOutput",
        "_RemoteSSEError",
        "_VALID_REASONS",
        "_infer_invalid_reason",
        "_parse_blocks",
        "resumable_sse(resumable_only)",
    ),
    "openreward.api._session.http": (
        "AuthenticationError",
        "_ENV_SERVER_MAX_ATTEMPTS",
        "_request_retryable_env_server.retry_with",
        "request_retryable",
        "set_retry_policy",
    ),
}


@functools.cache
def check() -> None:
    """Check the installed SDK against ``USES`` and the tested range (once a process)."""
    version = importlib.metadata.version("openreward")
    lacking = missing(USES)
    if lacking:
        raise ImportError(
            f"orsgen: openreward {version} lacks {', '.join(lacking)}, which orsgen uses; "
            f"install {RANGE!r} (the versions orsgen is tested with)"
        )
    if not tested(version):
        log.warning(
            "orsgen: openreward %s is outside the range orsgen is tested with (%s)", version, RANGE
        )


def tested(version: str) -> bool:
    """Whether ``version`` lies in ``[FLOOR, CEILING)`` (a pre-release counts as its release)."""
    return _release(FLOOR) <= _release(version) < _release(CEILING)


def missing(uses: dict[str, tuple[str, ...]]) -> list[str]:
    """The names of ``uses`` the installed SDK lacks, as ``module.name``."""
    lacking: list[str] = []
    for module_name, names in uses.items():
        try:
            module: object = importlib.import_module(module_name)
        except ImportError:
            lacking.append(module_name)
            continue
        lacking += [f"{module_name}.{name}" for name in names if not _has(module, name)]
    return lacking


def _has(module: object, name: str) -> bool:
    path, _, keyword = name.rstrip(")").partition("(")
    found: object = module
    for part in path.split("."):
        if not hasattr(found, part):
            return False
        found = getattr(found, part)
    return not keyword or (callable(found) and keyword in inspect.signature(found).parameters)


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version.split("+")[0])[:3])

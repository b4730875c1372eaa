"""One adapter's settings: :class:`AdapterConfig`, every constructor keyword checked once into
one frozen, picklable object, grouped by who reads them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, cast

from orsgen.runtime.records import passk
from orsgen.runtime.errors import ServerNotConfiguredError
from orsgen.runtime.choosing.curriculum import PassRateCurriculum
from orsgen.runtime.choosing.prior import Identity
from orsgen.runtime.choosing.tasks import SamplerFactory, TaskChoice
from orsgen.runtime.rollouts.settings import RolloutSettings
from orsgen.runtime.sessions.opening import SessionOptions
from orsgen.runtime.trajectories.writer import TrajectorySink
from orsgen.runtime.transport import health
from orsgen.runtime.transport.endpoint import Endpoint, resolve_all, session_secrets
from orsgen.runtime.upload.record import UploadRun

DEFAULT_CALL_TIMEOUT = 600.0
DEFAULT_OPEN_TIMEOUT = 1800.0


class AdapterSettings(TypedDict, total=False):
    """The keywords an adapter takes (see :class:`~orsgen.runtime.adapter.OrsAdapter`)."""

    base_url: str | Sequence[str] | None
    api_key: str | None
    secrets: Mapping[str, str] | None
    env_name: str | None
    deployment: str | None
    split: str | None
    timeout: float
    open_timeout: float
    group_size: int | None
    prefetch: bool
    keepalive: float | None
    strict: bool
    reconnect_for: float
    multimodal: bool
    env_overrides: Mapping[str, str] | None
    max_sessions: int | None
    rollout_timeout: float | None
    seed: int | None
    num_tasks: int | None
    indices: Sequence[int] | None
    unfinished_reward: float | None
    trajectories: str | os.PathLike[str] | TrajectorySink | None
    sampler: SamplerFactory | None
    curriculum: str | PassRateCurriculum | None
    clock: Callable[[], float] | None
    pass_threshold: float | None
    upload_run: str | UploadRun | None


@dataclass(frozen=True)
class AdapterConfig:
    """Every setting of one adapter, checked. Build it with :meth:`of`."""

    sessions: SessionOptions
    rollouts: RolloutSettings
    tasks: TaskChoice
    # Why no server is configured (``reset()`` raises it), or ``None``.
    no_server: str | None = None
    # A rollout passes when its reward is at least this (passk.passes).
    pass_threshold: float = passk.PASS_THRESHOLD

    @staticmethod
    def of(owner: type, **given: Any) -> AdapterConfig:
        """The config of an ``owner`` adapter class from its keywords, the class's defaults
        filling what is not given. Raises on a setting no session could honour."""
        unknown = sorted(set(given) - set(AdapterSettings.__annotations__))
        if unknown:
            raise TypeError(f"{owner.__name__}() got unexpected keyword(s): {', '.join(unknown)}")
        s = cast(AdapterSettings, given)  # its keys checked just above
        reconnect_for = float(s.get("reconnect_for", health.DEFAULT_RECONNECT_FOR))
        _check(s, reconnect_for)
        deployment = s.get("deployment")
        no_server: str | None = None
        try:
            servers = resolve_all(
                base_url=s.get("base_url"),
                api_key=s.get("api_key"),
                env_name=s.get("env_name"),
                deployment=getattr(owner, "DEPLOYMENT") if deployment is None else deployment,
                default_url=getattr(owner, "DEFAULT_URL"),
                default_env_name=getattr(owner, "ENV_NAME"),
            )
        except ServerNotConfiguredError as exc:
            # Reported by reset(), not here (TRL constructs one instance only to read the
            # tool schemas): a placeholder endpoint stands in.
            no_server = str(exc)
            env_name = s.get("env_name") or getattr(owner, "ENV_NAME")
            servers = (Endpoint("", "", env_name, None),)
        sessions = SessionOptions(
            endpoint=servers[0],
            split=s.get("split") or getattr(owner, "DEFAULT_SPLIT"),
            secrets=session_secrets(servers[0], s.get("secrets")),
            keepalive=s.get("keepalive"),
            toolset=getattr(owner, "TOOLSET"),
            env_overrides=overrides(s.get("env_overrides")),
            prefetch_group=s.get("group_size") if s.get("prefetch", True) else 1,
            open_timeout=float(s.get("open_timeout", DEFAULT_OPEN_TIMEOUT)),
            reconnect_for=reconnect_for,
            strict=bool(s.get("strict", False)),
            servers=servers,
            max_sessions=s.get("max_sessions"),
        )
        rollouts = RolloutSettings.of(
            float(s.get("timeout", DEFAULT_CALL_TIMEOUT)),
            s.get("rollout_timeout"),
            bool(s.get("multimodal", False)),
            s.get("unfinished_reward"),
            s.get("trajectories"),
            s.get("clock"),
            s.get("upload_run"),
        )
        tasks = TaskChoice.of(
            s.get("seed"),
            s.get("num_tasks"),
            s.get("indices"),
            s.get("group_size"),
            s.get("sampler"),
            s.get("curriculum"),
        )
        threshold = s.get("pass_threshold")
        if threshold is None:
            threshold = getattr(owner, "PASS_THRESHOLD", passk.PASS_THRESHOLD)
        threshold = passk.check_threshold(threshold)
        curriculum = s.get("curriculum")
        if isinstance(curriculum, PassRateCurriculum):  # its prior must be of this stream
            env_name, sha = getattr(owner, "ENV_NAME"), getattr(owner, "TOOLS_SHA256")
            curriculum.check_stream(Identity(env_name, sessions.split, sha, threshold))
        return AdapterConfig(sessions, rollouts, tasks, no_server, threshold)


def _check(s: AdapterSettings, reconnect_for: float) -> None:
    group_size, keepalive = s.get("group_size"), s.get("keepalive")
    max_sessions, rollout_timeout = s.get("max_sessions"), s.get("rollout_timeout")
    if group_size is not None and group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}")
    if keepalive is not None and keepalive <= 0:
        raise ValueError(f"keepalive must be positive, got {keepalive}")
    if reconnect_for < 0:
        raise ValueError(f"reconnect_for must be non-negative, got {reconnect_for}")
    if max_sessions is not None and (isinstance(max_sessions, bool) or max_sessions < 1):
        raise ValueError(f"max_sessions must be at least 1 (or None), got {max_sessions}")
    if rollout_timeout is not None and rollout_timeout <= 0:
        raise ValueError(f"rollout_timeout must be positive (or None), got {rollout_timeout}")


class _Overrides(dict[str, str]):
    """``env_overrides`` whose repr shows names only, so no log or traceback holds a value."""

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: '<hidden>'" for k in self) + "}"


def overrides(values: Mapping[str, str] | None) -> dict[str, str] | None:
    """A private copy of ``env_overrides``; a bad entry is named by its key, never its value."""
    if not values:
        return None
    out = _Overrides()
    items: list[tuple[object, object]] = list(values.items())  # untyped callers pass anything
    for key, value in items:
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"env_overrides[{key!r}] must map a str name to a str value")
        out[key] = value
    return out


class _Unset:
    """Default of an optional tool argument the caller did not give: it is not sent. One
    instance: a copy or an unpickled one is ``UNSET`` itself (``__reduce__``)."""

    def __repr__(self) -> str:
        return "<unset>"

    def __reduce__(self) -> str:
        return "UNSET"


# Typed Any so an optional ``path: str = UNSET`` stays ``str`` for mypy and for TRL's
# schema (a ``str | None`` hint would tell the model null is allowed when it is not).
UNSET: Any = _Unset()

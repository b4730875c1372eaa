"""The platform's per-task difficulty as a curriculum prior:
``PassRateCurriculum(prior=platform_difficulty("owner/name", split=..., model_name=...))``.
How a pass rate is read from the SDK's ``get_task_difficulty`` figures, and why it never fails
a run: docs/viewing.md, "The platform's difficulty as a curriculum prior".
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orsgen.runtime.errors import describe
from orsgen.runtime.records.passk import PASS_THRESHOLD

MIN_ROLLOUTS = 4  # fewer rollouts than this: the task stays unseen
DEFAULT_TIMEOUT = 30.0  # seconds the platform may take to answer


class PlatformPriorWarning(UserWarning):
    """The platform's difficulty gave no prior, or a partly estimated one (and why)."""


@dataclass(frozen=True)
class Difficulty:
    """One task's ``TaskDifficulty`` figures, pooled over variants."""

    task_index: int
    avg_reward: float
    min_reward: float
    max_reward: float
    num_rollouts: int


def _warn(message: str) -> dict[int, float]:
    warnings.warn(message, PlatformPriorWarning, stacklevel=3)
    return {}


def fetch(
    name: str,
    filters: Mapping[str, str | None],
    api_key: str | None,
    base_url: str | None,
    timeout: float,
) -> list[Any]:
    """The SDK's ``get_task_difficulty(**filters)`` rows, within ``timeout`` seconds (it runs on a
    daemon thread, so an API that never answers cannot hold the run or its exit)."""
    # The SDK ships no type information; imported here, so importing this module is free.
    import openreward  # type: ignore[import-untyped]

    sdk: Any = openreward
    box: dict[str, Any] = {}

    def ask() -> None:
        try:
            client = sdk.OpenReward(api_key=api_key, base_url=base_url)
            try:
                environment = client.environments.get(name)
                box["rows"] = environment.get_task_difficulty(**filters)
            finally:
                client.close()
        except BaseException as exc:  # noqa: BLE001 - reported as a warning by the caller
            box["error"] = exc

    worker = threading.Thread(target=ask, name="orsgen-platform-difficulty", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise TimeoutError(f"no answer within {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return list(box.get("rows") or [])


def pooled(rows: Sequence[Any], split: str | None) -> list[Difficulty]:
    by_task: dict[int, list[Any]] = {}
    for row in rows:
        if split is None or getattr(row, "split", None) in (split, None):
            by_task.setdefault(int(row.task_index), []).append(row)
    out: list[Difficulty] = []
    for index, group in sorted(by_task.items()):
        count = sum(int(r.num_rollouts) for r in group)
        if count <= 0:
            continue
        mean = sum(float(r.avg_reward) * int(r.num_rollouts) for r in group) / count
        low = min(float(r.min_reward) for r in group)
        high = max(float(r.max_reward) for r in group)
        out.append(Difficulty(index, mean, low, high, count))
    return out


def pass_rates(
    tasks: Sequence[Difficulty], threshold: float, min_rollouts: int
) -> tuple[dict[int, float], int]:
    """(task index -> pass rate, how many rates are stand-ins), by the module's rules."""
    seen = [t for t in tasks if t.num_rollouts >= min_rollouts]
    binary = all(t.min_reward in (0.0, 1.0) and t.max_reward in (0.0, 1.0) for t in seen)
    exact = binary and 0.0 < threshold <= 1.0  # the mean reward is the pass rate
    rates: dict[int, float] = {}
    estimated = 0
    for t in seen:
        if not exact and t.max_reward < threshold:
            rates[t.task_index] = 0.0
        elif not exact and t.min_reward >= threshold:
            rates[t.task_index] = 1.0
        else:
            rates[t.task_index] = min(max(t.avg_reward, 0.0), 1.0)
            estimated += not exact
    return rates, estimated


def platform_difficulty(
    name: str | None,
    *,
    split: str | None = None,
    model_name: str | None = None,
    training_stage: str | None = None,
    pass_threshold: float = PASS_THRESHOLD,
    min_rollouts: int = MIN_ROLLOUTS,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> dict[int, float]:
    """The platform's pass rate per task of the catalog environment ``name``
    (``"owner/name"``), for ``PassRateCurriculum(prior=...)``: task index to pass rate in
    ``[0, 1]``, read through the SDK from ``OPENREWARD_API_URL`` (or ``base_url``'s
    ``api.`` host) with ``api_key`` (default ``OPENREWARD_API_KEY``).

    ``split``, ``model_name`` and ``training_stage`` (``"pretrained"``, ``"sft"``, ``"rl"``)
    narrow the rollouts the figures come from. With binary rewards the mean reward is the
    pass rate; otherwise a task whose maximum is below ``pass_threshold`` gets 0, one whose
    minimum reaches it 1, and the rest their mean reward clipped to ``[0, 1]`` (with a
    warning). Tasks with fewer than ``min_rollouts`` rollouts are left out (unseen). Every
    failure is a :class:`PlatformPriorWarning` and ``{}``, which is no prior."""
    where = f"the platform's difficulty of {name!r}"
    if not name or "/" not in name:
        return _warn(
            f"no prior from {where}: it needs a catalog name 'owner/name' (a local or "
            "self-hosted environment has no platform figures); training goes on without one"
        )
    given = {"split": split, "model_name": model_name, "training_stage": training_stage}
    try:
        rows = fetch(name, given, api_key, base_url, timeout)
    except Exception as exc:  # noqa: BLE001 - no prior is never a failed run
        return _warn(f"no prior from {where}: {describe(exc)}; training goes on without one")
    filters = ", ".join(
        f"{'stage' if k == 'training_stage' else k}={v!r}"
        for k, v in given.items()
        if v is not None
    )
    tasks = pooled(rows, split)
    rates, estimated = pass_rates(tasks, float(pass_threshold), min_rollouts)
    if not rates:
        few = f" with at least {min_rollouts} rollouts" if tasks else ""
        return _warn(
            f"no prior from {where}: the platform has no task{few}"
            f"{' for ' + filters if filters else ''}; training goes on without one"
        )
    if estimated:
        _warn(
            f"{where}: rewards are not binary, so for {estimated} of {len(rates)} tasks "
            f"(neither always nor never reaching pass_threshold={pass_threshold:g}) the mean "
            "reward, clipped to [0, 1], stands in for the pass rate"
        )
    return rates

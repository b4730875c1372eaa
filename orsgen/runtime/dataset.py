"""Building the TRL ``train_dataset`` from an environment's task list in the fewest round trips."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from orsgen.jsonobject import is_object
from orsgen.runtime import mixture
from orsgen.runtime.errors import ServerNotConfiguredError, TaskLoadError, describe
from orsgen.runtime.transport import health
from orsgen.runtime.transport.endpoint import Endpoint, resolve_all
from orsgen.runtime.transport.process import current
from orsgen.runtime.transport.sdk import environment, stateless

if TYPE_CHECKING:
    # Re-exported for generated packages; `datasets` ships no type information (see pyproject).
    from datasets import Dataset as Dataset  # type: ignore[import-untyped]

RESERVED_COLUMNS = ("prompt", "task_index", "split")
# Every load_tasks() dataset has them (``split`` is optional: older ones lack it).
_REQUIRED_COLUMNS = ("prompt", "task_index")
# Above this span/len ratio a sparse index list is fetched task by task instead of as one range.
_MAX_RANGE_WASTE = 4
DEFAULT_TIMEOUT = 600.0
T = TypeVar("T")


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


class _SplitReader:
    def __init__(self, endpoint: Endpoint, env: Any, split: str) -> None:
        self.endpoint, self.env, self.split = endpoint, env, split

    async def _post(self, path: str, **payload: Any) -> Any:
        path = self.endpoint.env_path(path)  # this environment's own path: no redirect
        return await stateless(
            self.endpoint, self.env, "POST", path, {"split": self.split, **payload}
        )

    async def num_tasks(self) -> int:
        return int((await self._post("/num_tasks"))["num_tasks"])

    async def task(self, i: int) -> Any:
        return (await self._post("/task", index=i))["task"]

    async def task_range(self, start: int | None, stop: int | None) -> list[Any]:
        bounds = {k: v for k, v in (("start", start), ("stop", stop)) if v is not None}
        try:
            return list((await self._post("/task_range", **bounds))["tasks"])
        except Exception as exc:
            if _status(exc) not in (404, 405):
                raise
        # An older server without /task_range: the whole split, then per index.
        try:
            return list((await self._post("/tasks"))["tasks"])[start:stop]
        except Exception as exc:
            if _status(exc) not in (400, 404, 405):
                raise
        wanted = range(await self.num_tasks())[slice(start, stop)]
        return list(await asyncio.gather(*(self.task(i) for i in wanted)))


def _on_loop(
    endpoint: Endpoint,
    split: str,
    read: Callable[[_SplitReader], Awaitable[T]],
    timeout: float,
    failed: str,
) -> T:
    """``read`` of ``split`` on the runtime loop; a failure or timeout is a ``TaskLoadError``
    starting with ``failed``."""

    async def run() -> T:
        env = await environment(endpoint)
        try:
            return await read(_SplitReader(endpoint, env, split))
        except Exception as exc:
            if _status(exc) == 400:
                await _raise_if_no_such_split(endpoint, env, split)
            raise

    try:
        return current().run(run(), timeout=timeout)
    except (IndexError, TaskLoadError):  # an index past the end, an unknown split: clear
        raise
    except Exception as exc:
        raise TaskLoadError(f"{failed} {endpoint.label}: {describe(exc)}") from exc


async def _raise_if_no_such_split(endpoint: Endpoint, env: Any, split: str) -> None:
    """An unknown split's bare "Invalid split" (HTTP 400) as an error naming the splits."""
    try:
        listed: list[Any] = list(
            await stateless(endpoint, env, "GET", endpoint.env_path("/splits"))
        )
    except Exception:  # noqa: BLE001 - only a better message; the original error stands
        return
    names = sorted(str(s.get("name")) if is_object(s) else str(s) for s in listed)
    if split not in names:
        raise TaskLoadError(
            f"split {split!r} does not exist on {endpoint.label}; its splits: "
            f"{', '.join(names) or '(none)'}; pass one as split="
        )


async def _read(
    reader: _SplitReader, num_tasks: int | None, indices: Sequence[int] | None
) -> tuple[list[int], list[Any]]:
    if indices is None:
        specs = await reader.task_range(0 if num_tasks is not None else None, num_tasks)
        return list(range(len(specs))), specs
    wanted = list(indices)
    if not wanted:
        return [], []
    lo, hi = min(wanted), max(wanted) + 1
    if hi - lo <= _MAX_RANGE_WASTE * len(set(wanted)):
        window = await reader.task_range(lo, hi)
        if len(window) < hi - lo:  # the split ended early: name the first index past its end
            total = lo + len(window) if window else await reader.num_tasks()
            bad = next(i for i in wanted if i >= total)
            raise IndexError(
                f"task index {bad} is out of range for split {reader.split!r} ({total} tasks)"
            )
        return wanted, [window[i - lo] for i in wanted]
    unique = sorted(set(wanted))
    fetched = dict(zip(unique, await asyncio.gather(*(reader.task(i) for i in unique))))
    return wanted, [fetched[i] for i in wanted]


def task_rows(
    task_indices: Sequence[int], specs: Sequence[Any], include_metadata: bool, split: str
) -> dict[str, list[Any]]:
    """Dataset columns: an empty user ``prompt`` (TRL appends the environment's prompt),
    ``task_index``, ``split`` (so ``reset(**row)`` opens the row's split), then one column per
    task-spec key, never over the reserved ones."""
    rows: dict[str, list[Any]] = {
        "prompt": [[{"role": "user", "content": ""}] for _ in task_indices],
        "task_index": list(task_indices),
        "split": [split] * len(task_indices),
    }
    if include_metadata:
        keys = {str(k) for spec in specs if is_object(spec) for k in spec}
        for key in sorted(keys - set(RESERVED_COLUMNS)):
            rows[key] = [spec.get(key) if is_object(spec) else None for spec in specs]
    return rows


def load_tasks(
    *,
    split: str,
    num_tasks: int | None = None,
    indices: Sequence[int] | None = None,
    include_metadata: bool = True,
    base_url: str | Sequence[str] | None = None,
    api_key: str | None = None,
    env_name: str | None = None,
    deployment: str | None = None,
    default_url: str | None = None,
    default_env_name: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> "Dataset":
    """Fetch tasks and return a ``datasets.Dataset`` ready for ``GRPOTrainer(train_dataset=...)``.

    ``base_url`` may name several servers of the environment: the first that answers is read.
    Raises :class:`ServerNotConfiguredError` at once when there is no server to ask, and
    :class:`TaskLoadError` (cause chained) when the server fails or does not answer within
    ``timeout``."""
    if num_tasks is not None and indices is not None:
        raise ValueError("Provide num_tasks or indices, not both.")
    if num_tasks is not None and num_tasks < 0:
        raise ValueError(f"num_tasks must be non-negative, got {num_tasks}")
    if indices is not None and any(i < 0 for i in indices):
        raise ValueError(f"indices must be non-negative, got {min(indices)}")
    try:
        endpoints = resolve_all(
            base_url=base_url,
            api_key=api_key,
            env_name=env_name,
            deployment=deployment,
            default_url=default_url,
            default_env_name=default_env_name,
        )
    except ServerNotConfiguredError as exc:
        raise ServerNotConfiguredError(f"load_tasks: {exc}") from None
    for n, endpoint in enumerate(endpoints):
        try:
            task_indices, specs = _on_loop(
                endpoint,
                split,
                lambda reader: _read(reader, num_tasks, indices),
                timeout,
                f"could not load the tasks of split {split!r} from",
            )
        except TaskLoadError as exc:
            cause = exc.__cause__
            if n + 1 < len(endpoints) and cause is not None and health.unreachable(cause):
                continue  # not there: the next server may answer
            raise
        health.record(endpoint.session_url).answered()  # reached: later outages are ridden out
        return to_dataset(task_rows(task_indices, specs, include_metadata, split))
    raise AssertionError("resolve_all gives at least one endpoint")


def split_size(endpoint: Endpoint, split: str, timeout: float = DEFAULT_TIMEOUT) -> int:
    """How many tasks ``split`` has (one ``/num_tasks`` request)."""
    failed = f"could not count the tasks of split {split!r} on"
    return _on_loop(endpoint, split, _SplitReader.num_tasks, timeout, failed)


def to_dataset(rows: dict[str, list[Any]]) -> "Dataset":
    """``Dataset.from_dict``, except that a metadata column Arrow cannot hold in one type
    (``5`` in one task, ``"five"`` in another) becomes JSON text with a warning."""
    try:
        from datasets import Dataset  # pyright: ignore[reportMissingTypeStubs]
    except ImportError as exc:
        raise ImportError(
            "load_tasks returns a datasets.Dataset, and the datasets package is not "
            "installed: pip install datasets (or 'orsgen[train]' for TRL and all it needs)",
            name="datasets",
        ) from exc

    # `datasets` annotates the mapping as a bare `dict`, which strict pyright calls unknown.
    from_dict = cast(
        "Callable[[dict[str, list[Any]]], Dataset]",
        Dataset.from_dict,  # pyright: ignore[reportUnknownMemberType]
    )
    try:
        return from_dict(rows)
    except Exception:  # noqa: BLE001 - pyarrow raises several types; find the column below
        pass
    fixed: dict[str, list[Any]] = {}
    for key, values in rows.items():
        if key not in RESERVED_COLUMNS:
            try:
                from_dict({key: values})
            except Exception:  # noqa: BLE001
                warnings.warn(
                    f"task metadata {key!r} mixes value types across tasks; "
                    f"the {key!r} column holds each value as JSON text",
                    stacklevel=4,  # the caller of the generated load_tasks
                )
                values = [
                    None if v is None else json.dumps(v, sort_keys=True, ensure_ascii=False)
                    for v in values
                ]
        fixed[key] = values
    return from_dict(fixed)


def bundle_tasks(
    datasets: Mapping[str, "Dataset | None"],
    *,
    weights: Mapping[str, float] | None = None,
    block: int | None = None,
    seed: int | None = None,
    blocks: int | None = None,
) -> "Dataset":
    """One training set from several environments' ``load_tasks()`` datasets, for TRL's
    multi-environment mode (``environment_factory={"echo": EchoEnv, "quiz": QuizEnv}`` picks
    each row's adapter by the ``environment`` column this adds). Metadata columns are merged;
    a row gets ``None`` for the columns of other environments.

    Without ``weights`` the datasets are concatenated in the mapping's order. With
    ``weights={"echo": 3, "quiz": 1}`` and ``block=B``, every block of ``B`` rows holds each
    environment's exact share, drawn in seeded passes over its dataset; ``blocks`` blocks
    (by default the fewest that show every task once) with ``seed`` (default 0), by the rules
    of :mod:`orsgen.runtime.mixture`. A dataset of ``None`` makes its environment choose its
    own tasks (one process only). ``B`` = ``generation_batch_size // num_generations`` with
    ``shuffle_dataset=False`` keeps the shares in every optimizer step
    (docs/several-environments.md)."""
    if not datasets:
        raise ValueError("bundle_tasks needs at least one dataset")
    if weights is None:
        given = [
            f"{k}="
            for k, v in (("block", block), ("seed", seed), ("blocks", blocks))
            if v is not None
        ]
        if given or None in datasets.values():
            what = ", ".join(given) or "a dataset of None (the environment chooses its tasks)"
            raise ValueError(f"{what} shapes a weighted mixture: pass weights= too")
    # Unbatched, `to_dict()` returns the columns (its annotation also allows an iterator).
    parts = {
        name: cast(dict[str, list[Any]], ds.to_dict())  # pyright: ignore[reportUnknownMemberType]
        for name, ds in datasets.items()
        if ds is not None
    }
    for name, columns in parts.items():
        missing = [c for c in _REQUIRED_COLUMNS if c not in columns]
        if missing:
            raise ValueError(f"dataset {name!r} lacks {missing}; build it with load_tasks()")
        if "environment" in columns:
            raise ValueError(
                f"dataset {name!r} has an 'environment' column (task metadata?), which TRL "
                "reserves for choosing the environment; load it with include_metadata=False "
                "or remove that column"
            )
    sizes = {name: len(parts[name]["task_index"]) if name in parts else None for name in datasets}
    if weights is None:
        order: list[mixture.Row] = [(name, i) for name, n in sizes.items() for i in range(n or 0)]
    else:
        order = mixture.plan(sizes, weights, block=block, seed=seed, blocks=blocks)
    keys = sorted({k for columns in parts.values() for k in columns} - set(RESERVED_COLUMNS))
    rows: dict[str, list[Any]] = {"prompt": [], "task_index": [], "split": [], "environment": []}
    rows.update({key: [] for key in keys})
    for name, i in order:
        columns = parts.get(name, {})
        for key, values in rows.items():
            if key == "environment":
                values.append(name)
            elif i is None:  # the environment chooses its task: an empty prompt, no task
                values.append([{"role": "user", "content": ""}] if key == "prompt" else None)
            else:  # a column the dataset lacks (split, other environments' metadata): None
                values.append(columns[key][i] if key in columns else None)
    return to_dataset(rows)

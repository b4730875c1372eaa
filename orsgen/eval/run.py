"""``evaluate``: every task of a split ``n`` times against an OpenAI-compatible endpoint,
through a generated adapter; everything is checked before the first rollout.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orsgen.eval import report
from orsgen.eval.config import ADAPTER_FIELDS, EvalConfig, EvalConfigError, adapter_identity
from orsgen.recorded_package import package_path, recorded
from orsgen.eval.conversation import Conversation, tool_schemas, trl_tools
from orsgen.eval.endpoints import DEFAULT_DOWN_LIMIT, Endpoints, added_counts, public_url
from orsgen.eval.results import Record, Records, check_resume, read_records
from orsgen.eval.summary import summarize
from orsgen.eval.workers import Adapters, Plan, Prompts, run_all
from orsgen.jsonobject import as_object
from orsgen.runtime.errors import OrsRuntimeError
from orsgen.runtime.records.passk import PASS_THRESHOLD
from orsgen.rundir import ADAPTER_FILE, PROMPTS_FILE, RESULTS_FILE, FinishedRun, RunError
from orsgen.rundir import RunWriter, rows, write_json, writing

if TYPE_CHECKING:
    from orsgen.runtime.config import AdapterConfig


@dataclass(frozen=True)
class RunUsage:
    """summary.json's ``usage``: the endpoint's tokens summed over the rollouts that reported
    them, how many did not, and the means per rollout over those that did."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    rollouts_without_usage: int = 0
    prompt_tokens_per_rollout: float | None = None
    completion_tokens_per_rollout: float | None = None


@dataclass(frozen=True)
class EvalResult(FinishedRun):
    """A finished evaluation (docs/evaluating.md): ``summary`` is summary.json, ``config``
    run.json, ``records`` one slim :class:`Record` per rollout, and ``seconds`` the wall
    time of this call's rollouts (``None`` for shards merged). The transcripts stay in
    ``out``'s results.jsonl: :meth:`transcripts` reads them back one at a time."""

    records: Sequence[Record]
    seconds: float | None = 0.0
    config: EvalConfig | None = None

    @property
    def rows(self) -> Sequence[Record]:
        """The records (each readable as a mapping, ``row["verdict"]``)."""
        return self.records

    @property
    def coverage(self) -> float:
        return float(self.summary["coverage"])

    @property
    def mean_reward(self) -> float | None:
        value = self.summary["mean_reward"]
        return None if value is None else float(value)

    @property
    def pass_at_k(self) -> dict[str, float]:
        return dict(self.summary["pass_at_k"])

    @property
    def usage(self) -> RunUsage:
        return RunUsage(**self.summary.get("usage", {}))

    @property
    def stop(self) -> dict[str, int]:
        """Rollouts per stop reason (``orsgen.rundir.STOPS``), the reasons that occur."""
        return dict(self.summary.get("stop", {}))

    @property
    def cost(self) -> float | None:
        """The run's cost at ``config.price``; ``None`` without a price."""
        value = self.summary.get("cost")
        return None if value is None else float(value)

    def headline(self) -> str:
        """The run in one line, as ``orsgen eval`` ends: "8 rollouts on split 'test' in
        2.1 s: coverage 1.000, mean reward 0.500, pass@1 0.500, pass@2 0.750"."""
        s, n = self.summary, int(self.summary["n"])
        figures = [f"coverage {s['coverage']:.3f}", f"mean reward {shown(s['mean_reward'])}"]
        figures += [f"pass@{k} {shown(s['pass_at_k'].get(str(k)))}" for k in dict.fromkeys((1, n))]
        where = f"on split {s['split']!r}"
        if self.seconds is not None:
            where += f" in {self.seconds:.1f} s"
        return f"{s['rollouts']} rollouts {where}: {', '.join(figures)}"

    def transcripts(self) -> Iterator[dict[str, Any]]:
        """results.jsonl's rows, messages included, read one at a time."""
        if self.out is None:
            raise ValueError("this run kept no transcripts: pass out= to evaluate")
        return rows(self.out / RESULTS_FILE)

    def transcript(self, task_index: int, sample: int = 0) -> dict[str, Any] | None:
        """The row of (``task_index``, ``sample``), messages included, or ``None``."""
        wanted = (task_index, sample)
        return next(
            (r for r in self.transcripts() if (r["task_index"], r["sample"]) == wanted), None
        )


def shown(value: float | None) -> str:
    """A figure as the run's lines show it: three decimals, or "n/a"."""
    return "n/a" if value is None else f"{value:.3f}"


def _adapter_factory(
    env: type | Callable[[], Any],
    adapter: AdapterConfig | Mapping[str, Any] | None,
    rollout_timeout: float | None,
) -> Callable[[], Any]:
    """What makes the run's adapters: ``env`` with ``adapter``'s settings, or the factory."""
    from orsgen.runtime.config import AdapterConfig

    if not isinstance(env, type):
        if adapter is not None:
            raise EvalConfigError("adapter= configures an adapter class; a factory is used as is")
        return env
    if not isinstance(adapter, AdapterConfig):
        # No group prefetch: the workers open each rollout's session ahead themselves.
        settings = {"prefetch": False, "rollout_timeout": rollout_timeout, **(adapter or {})}
        try:
            adapter = AdapterConfig.of(env, **settings)
        except (TypeError, ValueError) as exc:
            raise EvalConfigError(f"adapter: {exc}") from exc
    if adapter.no_server is not None:
        raise EvalConfigError(f"adapter: {adapter.no_server}")
    return functools.partial(env, config=adapter)


def evaluate(
    env: type | Callable[[], Any],
    config: EvalConfig,
    *,
    adapter: AdapterConfig | Mapping[str, Any] | None = None,
    concurrency: int = 1,
    endpoint_api_key: str | Sequence[str] | None = None,
    endpoint_down_limit: float = DEFAULT_DOWN_LIMIT,
    out: str | Path | None = None,
    resume: bool = False,
    progress: bool = True,
    on_start: Callable[[EvalConfig, int], None] | None = None,
) -> EvalResult:
    """Evaluate ``config``'s model and endpoint on its split of a generated adapter class
    ``env`` (or a factory returning adapters), with the adapter's settings ``adapter`` (a
    mapping of its keywords, or an :class:`~orsgen.AdapterConfig`); results to ``out`` when
    given, which ``resume=True`` continues. docs/evaluating.md describes every keyword.

    Raises :class:`~orsgen.eval.EvalConfigError` (a ``ValueError``) for an unusable
    configuration, always before the first rollout; :class:`~orsgen.EndpointsDown` (a
    ``RuntimeError``) once every endpoint has been down for ``endpoint_down_limit``
    seconds; an error after that is raised as it is, with the rows written so far kept."""
    if concurrency < 1:
        raise EvalConfigError(f"must be at least 1, got {concurrency}", "concurrency")
    if not endpoint_down_limit > 0:
        raise EvalConfigError(f"must be positive, got {endpoint_down_limit}", "endpoint_down_limit")
    endpoints = Endpoints(
        config.endpoints,
        endpoint_api_key,
        config.request_timeout,
        endpoint_down_limit,
        attempts=config.request_attempts,
    )  # the key count checked before any network
    adapters = Adapters(_adapter_factory(env, adapter, config.rollout_timeout))
    target = Path(out) if out is not None else None
    with contextlib.ExitStack() as stack:
        stack.callback(adapters.close)
        stack.callback(endpoints.close)
        writer = stack.enter_context(writing(target)) if target is not None else None
        try:
            plan = _plan(adapters.probe(), config, writer, resume)
        except (ValueError, TypeError, LookupError, OrsRuntimeError) as exc:
            if isinstance(exc, (EvalConfigError, RunError)):  # RunError: an unreadable run
                raise
            raise EvalConfigError(str(exc)) from exc  # no such split, no server there, ...
        if on_start is not None:
            on_start(plan.config, sum(plan.expected().values()))
        conversation = Conversation(endpoints, plan.config, plan.config.rollout_timeout)
        log = writer.rows() if writer is not None else None
        prompts = Prompts(writer.directory / PROMPTS_FILE) if writer is not None else None
        started = time.monotonic()
        try:
            run_all(plan, adapters, conversation, concurrency, progress, log, prompts)
        finally:  # also when interrupted: the rows and endpoint counts so far are kept
            if log is not None:
                log.close()
            if prompts is not None:
                prompts.close()
            if writer is not None:
                writer.update(endpoint_counts=added_counts(plan.earlier, endpoints.pool.counts()))
        seconds = time.monotonic() - started
        records = plan.done  # the resumed rows' records, and the new ones
        summary = finish(writer, plan.config, plan.tasks, records)
    return EvalResult(summary, target, records, seconds, plan.config)


def finish(
    writer: RunWriter | None, config: EvalConfig, tasks: Sequence[int], records: Records
) -> dict[str, Any]:
    """The summary of ``records`` of ``tasks``, written with report.md by ``writer``."""
    summary = summarize(records, {**config.to_json(), "task_indices": list(tasks)}, records.tools)
    if writer is not None:
        writer.finish(summary, report.write, records)
    return summary


def _plan(probe: Any, given: EvalConfig, writer: RunWriter | None, resume: bool) -> Plan:
    """``given`` checked and filled in from the environment (one ``/num_tasks`` request)."""
    from orsgen.runtime import dataset

    here = probe.rollout.here
    kind: type = probe.__class__
    ours = adapter_identity(kind)
    for name in ADAPTER_FIELDS:
        if getattr(given, name) is not None and getattr(given, name) != ours[name]:
            raise EvalConfigError(
                f"is {getattr(given, name)!r} but the adapter's is {ours[name]!r}", name
            )
    split = str(given.split or here.split)
    count = dataset.split_size(here.endpoint, split, timeout=here.open_timeout)
    chosen = tasks_of(given, split, count)
    threshold = given.pass_threshold  # else the adapter's pass_threshold= or the default
    if threshold is None:
        threshold = getattr(probe.rollout, "pass_threshold", None)
    threshold = float(PASS_THRESHOLD if threshold is None else threshold)
    deadline = getattr(probe.rollout.settings, "rollout_timeout", None)  # the adapter's own
    if given.rollout_timeout is not None and given.rollout_timeout != deadline:
        raise EvalConfigError(
            f"is {given.rollout_timeout!r} but the adapter's is {deadline!r}", "rollout_timeout"
        )
    config = dataclasses.replace(
        given,
        endpoint=tuple(public_url(url) for url in given.endpoints),
        split=split,
        num_tasks=None,
        task_indices=tuple(dict.fromkeys(chosen)),
        pass_threshold=threshold,
        rollout_timeout=deadline,
        **ours,
    )
    done, earlier = Records(), as_object(None)
    if writer is not None:
        out = writer.directory
        earlier = check_resume(out, config, resume)
        package = recorded(package_path(kind), out)
        # The servers' public URLs: a fact, so a resume at another address records the new one.
        urls = [public_url(s.session_url) for s in getattr(here, "servers", ()) if s.session_url]
        where = None if not urls else urls[0] if len(urls) == 1 else urls
        writer.start(
            config.to_json(), **package, environment_url=where, endpoint_counts=earlier or None
        )
        # adapter.json: the tools as TRL renders them, in their own key order (the model saw
        # them rendered in it), and the package's training split.
        view = {
            "adapter": kind.__qualname__,
            "environment": probe.ENV_NAME,
            "tools_sha256": probe.TOOLS_SHA256,
            "train_split": probe.DEFAULT_SPLIT,
            "tools": tool_schemas(trl_tools(probe)),
        }
        write_json(out / ADAPTER_FILE, view, sort_keys=False)
        # A group judge judges n samples: a task with fewer rows runs again, all of them.
        group = config.n if getattr(kind, "SUPPORTS_SCORE_GROUP", False) else None
        done = read_records(out / RESULTS_FILE, group)
    return Plan(config, done, earlier)


def tasks_of(given: EvalConfig, split: str, count: int) -> Sequence[int]:
    """The tasks ``given`` names in a split of ``count``: exactly ``task_indices`` (each
    checked against ``count``), the first ``num_tasks``, or all."""
    if given.task_indices is not None:
        past = [i for i in given.task_indices if not 0 <= i < count]
        if past:
            words = ", ".join(map(str, past))
            raise EvalConfigError(
                f"names {words}, past the end of split {split!r} ({count} tasks)", "task_indices"
            )
        return given.task_indices
    if count < 1:
        raise EvalConfigError(f"split {split!r} has no tasks: there is no task to evaluate")
    return range(min(count, given.num_tasks or count))

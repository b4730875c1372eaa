"""``validate()``: the target reached, the probes run (plan), the checks judged (checks),
the files written (report)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from orsgen.runtime.records.passk import PASS_THRESHOLD, check_threshold
from orsgen.runtime.transport.endpoint import session_secrets
from orsgen.runtime.transport.process import current
from orsgen.snapshot import TargetError, quiet_sdk
from orsgen.snapshot.splits import held_out
from orsgen.snapshot.stored import Environment
from orsgen.validation import report
from orsgen.validation.checks import Rules, judge
from orsgen.validation.plan import Observations, Plan
from orsgen.validation.probe import Prober, Timings
from orsgen.validation.result import ValidationResult
from orsgen.validation.target import connect, public
from orsgen.wording import plural

DEFAULT_NUM_TASKS = 20
DEFAULT_CONCURRENCY = 4
DEFAULT_TIMEOUT = 60.0
CLOSE_WAIT = 10.0  # seconds an interrupted run waits for its sessions to close


def _splits(
    facts: Environment, wanted: Sequence[str] | None, num_tasks: int | None
) -> dict[str, int]:
    """The splits to probe and how many tasks of each: held-out splits last, so a task in
    two splits is named in the held-out one."""
    counts = {s.name: s.num_tasks for s in facts.splits}
    if wanted:
        unknown = [s for s in wanted if s not in counts]
        if unknown:
            raise TargetError(
                f"split {unknown[0]!r} does not exist; splits: {', '.join(sorted(counts)) or '(none)'}"
            )
        names = list(dict.fromkeys(wanted))
    else:
        names = list(counts)
    names.sort(key=lambda n: (held_out(n), n))
    return {n: counts[n] if num_tasks is None else min(num_tasks, counts[n]) for n in names}


def validate(
    target: str,
    *,
    env_name: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    secrets: Mapping[str, str] | None = None,
    toolset: str | None = None,
    splits: Sequence[str] | None = None,
    num_tasks: int | None = DEFAULT_NUM_TASKS,
    concurrency: int = DEFAULT_CONCURRENCY,
    pass_threshold: float = PASS_THRESHOLD,
    reward_range: tuple[float, float] = (0.0, 1.0),
    seed: int = 0,
    timeout: float = DEFAULT_TIMEOUT,
    out: str | Path | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> ValidationResult:
    """Probe an environment for the defects that waste a training run and return what was
    found: every check's status and each finding (docs/validating.md).

    ``target`` is what ``orsgen TARGET -o DIR`` takes (a catalog name, a URL, a Python
    file, served on loopback for the run) or a generated package directory (with
    ``base_url``, else the URL its snapshot recorded). ``num_tasks``: the first N tasks of
    each split (``None``: all). A task passes a degenerate action when its reward is at
    least ``pass_threshold`` (the rule of ``orsgen eval``). With ``out``, validation.json and
    report.md are written there (also when interrupted: then ``KeyboardInterrupt`` is
    raised again once they are). Raises :class:`orsgen.snapshot.TargetError` when the
    target cannot be reached or a split does not exist. No key or secret is ever written.
    """
    quiet_sdk()
    threshold = check_threshold(pass_threshold)
    low, high = (float(v) for v in reward_range)
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise ValueError(f"reward_range must be two finite numbers LO <= HI, got {reward_range!r}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if num_tasks is not None and num_tasks < 1:
        raise ValueError(f"num_tasks must be at least 1 (or None for all), got {num_tasks}")
    options: dict[str, Any] = {
        "splits": list(splits) if splits else None,
        "num_tasks": "all" if num_tasks is None else num_tasks,
        "concurrency": concurrency,
        "pass_threshold": threshold,
        "reward_range": [low, high],
        "seed": seed,
        "env_name": env_name,
        "toolset": toolset,
        "base_url": public(base_url) if base_url else None,
    }
    started = time.monotonic()
    obs = Observations()
    timings = Timings()
    environment: str | None = None
    label = public(target)
    interrupted = False

    def finish(stopped: bool) -> ValidationResult:
        """The checks judged over what was observed, and (with ``out``) written."""
        statuses, findings = judge(obs, Rules(threshold, (low, high)), stopped)
        result = ValidationResult(
            target=label,
            environment=environment,
            options=options,
            checks=statuses,
            findings=findings,
            latency=timings.latency(),
            interrupted=stopped,
            seconds=time.monotonic() - started,
            out=None if out is None else str(out),
        )
        if out is not None:
            report.write(Path(out), result)
        return result

    try:
        with connect(
            target,
            env_name=env_name,
            base_url=base_url,
            api_key=api_key,
            secrets=secrets,
            toolset=toolset,
            timeout=timeout,
            progress=progress,
        ) as live:
            label, environment = live.target, live.environment.identity.label
            obs.splits.update(_splits(live.environment, splits, num_tasks))
            described = ", ".join(f"{s} ({plural(n, 'task')})" for s, n in obs.splits.items())
            progress(f"probing {environment}: {described or 'no splits'}")
            keys = session_secrets(live.endpoint, secrets)
            prober = Prober(live.endpoint, keys, toolset, timeout, timings)
            closing = _run(Plan(prober, obs, seed, concurrency, progress))
            interrupted = closing is not None
            if closing is not None:  # what was found is written first, then sessions close
                finish(True)
                with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C: leave now
                    closing.wait(CLOSE_WAIT)
                raise KeyboardInterrupt
    except KeyboardInterrupt:
        if not interrupted:  # before the probes started (reaching the target)
            finish(True)
        raise
    result = finish(False)
    sessions = len(obs.sessions) + len(obs.looks)
    calls = sum(len(s.calls) for s in obs.sessions)
    progress(
        f"probed {plural(len(obs.done), 'task')} in {result.seconds:.1f} s "
        f"({plural(sessions, 'session')}, {plural(calls, 'call')})"
    )
    return result


def _run(plan: Plan) -> threading.Event | None:
    """The plan on the runtime loop. Ctrl-C cancels it and returns the event set once its
    sessions are closed; ``None`` when it ran to the end."""
    ended = threading.Event()

    async def run() -> None:
        try:
            await plan.run()
        finally:
            ended.set()

    future = current().submit(run())
    try:
        while True:  # in short waits, so that Ctrl-C reaches this thread
            with contextlib.suppress(concurrent.futures.TimeoutError):
                future.result(timeout=0.25)
                return None
    except KeyboardInterrupt:
        future.cancel()
        return ended

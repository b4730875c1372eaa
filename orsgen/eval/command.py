"""``orsgen eval DIR --endpoint URL --model NAME [options]``: the command line over
:func:`orsgen.eval.evaluate`, and what it shares with ``orsgen merge`` (:func:`ran`). Exit
codes: docs/evaluating.md ("Exit codes"); an unusable configuration is always found before
the first rollout."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import inspect
import os
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from orsgen.arguments import Failed, UsageError, needs, run_directory, secret_pairs
from orsgen.eval.config import EvalConfig, EvalConfigError
from orsgen.eval.endpoints import EndpointsDown, check, keyed
from orsgen.eval.options import parser
from orsgen.eval.run import EvalResult, evaluate, shown, tasks_of
from orsgen.wording import plural

# The options whose dest is a field of EvalConfig set that field (``-n``: ``n``).
CONFIG_FIELDS = frozenset(f.name for f in dataclasses.fields(EvalConfig))
EXTRA = ("openai", "tqdm", "matplotlib", "transformers")  # orsgen[eval]: evaluate, merge


def load_adapter(directory: str, class_name: str | None) -> Any:
    """The adapter class of the generated package in ``directory``."""
    from orsgen.runtime.adapter import OrsAdapter, SelfScoring

    path = Path(directory).resolve()
    if not (path / "adapter.py").is_file():
        raise UsageError(f"{directory} is not a generated package (no adapter.py)")
    parent = str(path.parent)
    sys.path.insert(0, parent)
    try:
        module = importlib.import_module(path.name)
    except Exception as exc:  # noqa: BLE001 - any import failure is a configuration error
        raise UsageError(f"cannot import {path.name} from {path.parent}: {exc}") from None
    finally:
        # Kept (a pickled adapter's class is found by its module's name, here and in spawned
        # children) but last: a sibling package (generated/rich) never shadows an installed
        # one (the rich library TRL imports) for the rest of the process.
        sys.path.remove(parent)
        sys.path.append(parent)
    found = {
        name: obj
        for name, obj in inspect.getmembers(module, inspect.isclass)
        if issubclass(obj, OrsAdapter) and not issubclass(obj, SelfScoring)
    }
    if class_name is not None:
        if class_name not in found:
            raise UsageError(f"no adapter class {class_name!r}; the package has {sorted(found)}")
        return found[class_name]
    if len(found) != 1:
        raise UsageError(f"the package has adapters {sorted(found)}; pick one with --env-class")
    return next(iter(found.values()))


def _config(args: argparse.Namespace, klass: Any) -> EvalConfig:
    """The :class:`EvalConfig` of the options, ``--split`` and ``--indices`` checked against
    the package's snapshot.json first (no network)."""
    from orsgen.snapshot.errors import TargetError
    from orsgen.snapshot.model import SnapshotError, load_text
    from orsgen.snapshot.splits import choose_split

    given: dict[str, Any] = {k: v for k, v in vars(args).items() if k in CONFIG_FIELDS}
    split: str = args.split or klass.DEFAULT_SPLIT
    given["split"] = split
    config = EvalConfig(**{k: v for k, v in given.items() if v is not None})
    path = Path(args.dir) / "snapshot.json"
    try:
        splits = load_text(path.read_text(encoding="utf-8"), str(path)).environment.splits
    except (OSError, SnapshotError):
        return config  # `orsgen check` says what is wrong with it
    sizes = {s.name: s.num_tasks for s in splits}
    try:
        choose_split(list(sizes), split)
        tasks_of(config, split, sizes[split])
    except TargetError as exc:  # the split, as the snapshot names them
        raise UsageError(str(exc)) from None
    except EvalConfigError as exc:
        raise EvalConfigError(f"{exc.problem}, as {path} records it", exc.field) from None
    return config


def adapter_config(args: argparse.Namespace, klass: Any, package: str, **settings: Any) -> Any:
    """The :class:`~orsgen.AdapterConfig` of :func:`environment_options` and ``settings`` for
    the adapter class ``klass`` of ``package``."""
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


def _evaluate(args: argparse.Namespace) -> EvalResult:
    """Every option checked, then the endpoint, then the run."""
    if args.resume and not args.out:
        raise UsageError("--resume needs --out RUN, the run to continue")
    keyed(args.endpoint, args.endpoint_api_key)  # the key count, before anything else
    if args.out:
        run_directory(args.out, "--out")
    klass = load_adapter(args.dir, args.env_class)
    config = _config(args, klass)
    from orsgen.runtime.upload import UploadRun

    upload = None
    if args.upload_run:
        upload = UploadRun(args.upload_run, model_name=args.model, training_stage=args.upload_stage)
    adapter = adapter_config(
        args, klass, args.dir, rollout_timeout=args.rollout_timeout, upload_run=upload
    )
    keys = args.endpoint_api_key or os.environ.get("OPENAI_API_KEY")
    check(keyed(args.endpoint, keys))

    def say_start(config: EvalConfig, left: int) -> None:
        tasks = len(config.tasks())
        total = tasks * config.n
        what = f"{config.model} on split {config.split!r} of {config.environment}"
        if config.shard is not None:
            what = f"shard {config.shard[0]}/{config.shard[1]}: {what}"
        if left == 0:
            said = f"the run in {args.out} is complete ({plural(total, 'rollout')}): nothing to run"
        elif left < total:
            said = f"resuming {what}: {left} of {total} rollouts left"
        else:
            said = f"evaluating {what}: {plural(tasks, 'task')} x n={config.n}"
        print(said, file=sys.stderr)

    return evaluate(
        klass,
        config,
        adapter=adapter,
        concurrency=args.concurrency,
        endpoint_api_key=keys,
        endpoint_down_limit=args.endpoint_down_limit,
        out=args.out,
        resume=args.resume,
        progress=not args.no_progress,
        on_start=say_start,
    )


def ran(work: Callable[[], EvalResult], command: str, kept: str, min_coverage: float | None) -> int:
    """``orsgen eval`` and ``orsgen merge``: ``work``'s run, its headline on stdout and where
    its files are on stderr; SIGTERM stops it as Ctrl-C does, saying what is ``kept``."""
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        result = work()
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (a preemption, an eviction)
        print(f"orsgen {command}: interrupted{kept}", file=sys.stderr, flush=True)
        signum = next((a for a in exc.args if isinstance(a, int)), signal.SIGINT)
        os._exit(128 + signum)  # the abandoned rollouts' threads are not waited for
    except EvalConfigError as exc:
        option = parser().option(exc.field) if exc.field else None
        raise UsageError(f"{option} {exc.problem}" if option else str(exc)) from None
    except EndpointsDown as exc:
        raise Failed(f"{exc} (--endpoint-down-limit){kept}") from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    n = result.summary["n"]
    share = result.summary["zero_variance_share"].get(str(n))
    groups = f", zero-variance share at G={n}: {shown(share)}" if n >= 2 else ""
    print(result.headline() + groups)
    if result.out is not None:
        print(f"results in {result.out}: results.jsonl, summary.json, report.md", file=sys.stderr)
        print(f"read every rollout: orsgen view {shlex.quote(str(result.out))}", file=sys.stderr)
    if min_coverage is not None and result.coverage < min_coverage:
        raise Failed(f"coverage {result.coverage:.3f} is below --min-coverage {min_coverage}")
    return 0


def main(argv: Sequence[str]) -> int:
    args = parser().parse(list(argv))
    needs("eval", EXTRA)
    kept = f"; the rows so far are in {args.out}: continue with --resume" if args.out else ""

    def run() -> EvalResult:
        from orsgen.runtime.upload.uploader import said_once

        with said_once(args.upload_run) if args.upload_run else contextlib.nullcontext():
            return _evaluate(args)

    return ran(run, "eval", kept, args.min_coverage)


def _terminated(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(signum)

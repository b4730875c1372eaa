"""``orsgen eval DIR --endpoint URL --model NAME [options]`` and ``orsgen eval --compare
RUN_A RUN_B``: the command line over :func:`orsgen.eval.evaluate`.

Exit codes: 0 when the run completed (whatever its failures), 1 when ``--min-coverage``
is not met (or for a bug: its traceback, the rows written so far kept), 2 for an unusable
configuration, always found before the first rollout (one line on stderr)."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orsgen.arguments import Parser, UsageError, at_least, in_range, number, secret_pairs, seconds
from orsgen.eval.compare import compare, format_comparison, load_summary
from orsgen.eval.config import DEFAULT_MAX_TURNS, EvalConfig, EvalConfigError
from orsgen.eval.run import SHORTHAND, EvalResult, config_from_keywords, evaluate, public_url
from orsgen.runtime.passk import PASS_THRESHOLD
from orsgen.wording import plural

EXIT_OK, EXIT_COVERAGE, EXIT_USAGE = 0, 1, 2
KEY_OPTION = "--endpoint-api-key (or OPENAI_API_KEY)"


class ConfigError(Exception):
    """An unusable configuration: one line, exit code 2."""


def _indices(text: str) -> list[int]:
    try:
        found = [int(i) for i in text.split(",") if i.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes comma-separated integers, got {text!r}") from None
    if not found:
        raise argparse.ArgumentTypeError("names no task")
    return found


def _parser() -> Parser:
    p = Parser(
        prog="orsgen eval",
        description="Evaluate a model behind an OpenAI-compatible endpoint on an environment, "
        "through a generated adapter package. Nothing is written without --out; with it, the "
        "run's files go there and the command ends by saying where.",
    )
    p.add_argument("dir", nargs="?", help="the generated package directory")
    p.add_argument("--compare", nargs=2, metavar=("RUN_A", "RUN_B"), help="compare two runs")
    p.add_argument(
        "--force",
        action="store_true",
        help="with --compare: compare runs that differ in environment, split, tools, -n, "
        "--max-turns or --pass-threshold",
    )
    p.add_argument("--endpoint", help="base URL of the OpenAI-compatible API (…/v1)")
    p.add_argument("--model", help="model name as the endpoint knows it")
    p.add_argument(
        "--endpoint-api-key", help="the endpoint's key (default: OPENAI_API_KEY); never written"
    )
    p.add_argument("--base-url", action="append", help="ORS server URL (repeat for several)")
    p.add_argument("--api-key", help="ORS API key (default: OPENREWARD_API_KEY); never written")
    p.add_argument(
        "--secret",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="per-session secret (repeatable); never written",
    )
    p.add_argument("--env-class", help="the adapter class, when the package has several")
    p.add_argument("--split", help="split to evaluate (default: the package's default split)")
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--num-tasks", type=at_least(1), help="the first N tasks of the split (default: all)"
    )
    group.add_argument("--indices", type=_indices, help="task indices, comma-separated (0,3,7)")
    p.add_argument(
        "-n", "--samples", type=at_least(1), default=1, help="samples per task (default 1)"
    )
    p.add_argument(
        "--concurrency", type=at_least(1), default=1, help="rollouts at once (default 1)"
    )
    p.add_argument(
        "--max-turns",
        type=at_least(1),
        default=DEFAULT_MAX_TURNS,
        help=f"assistant turns per rollout (default {DEFAULT_MAX_TURNS})",
    )
    p.add_argument(
        "--rollout-timeout",
        type=seconds,
        help="seconds per rollout from its reset (default: no limit)",
    )
    p.add_argument(
        "--temperature",
        type=in_range(0.0),
        help="sampling temperature sent with each request (default: the endpoint's own)",
    )
    p.add_argument(
        "--max-tokens",
        type=at_least(1),
        help="most tokens per assistant turn (default: the endpoint's own limit)",
    )
    p.add_argument(
        "--pass-threshold",
        type=number,
        help=f"a rollout passes when its reward >= this (default {PASS_THRESHOLD}, the "
        "package's pass threshold)",
    )
    p.add_argument(
        "--unfinished-reward",
        type=number,
        help="reward of an unfinished rollout (default: none, not passing)",
    )
    p.add_argument(
        "--seed", type=int, help="derives each request's seed (one per task, sample and turn)"
    )
    p.add_argument(
        "--out",
        help="output directory for results.jsonl, run.json, summary.json and report.md "
        "(default: none, nothing is written)",
    )
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument(
        "--min-coverage", type=in_range(0.0, 1.0), help="exit 1 when coverage is lower (0 to 1)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--upload-run",
        metavar="NAME",
        help="also upload every rollout to OpenReward's runs UI under this run name "
        "(OPENREWARD_API_KEY; OPENREWARD_API_URL for another API); never slows the run",
    )
    p.add_argument(
        "--upload-stage",
        choices=("pretrained", "sft", "rl"),
        default="pretrained",
        help="the training stage the uploaded rollouts are filed under (default pretrained)",
    )
    return p


def load_adapter(directory: str, class_name: str | None) -> Any:
    """The adapter class of the generated package in ``directory``."""
    from orsgen.runtime.adapter import OrsAdapter, SelfScoring

    path = Path(directory).resolve()
    if not (path / "adapter.py").is_file():
        raise ConfigError(f"{directory} is not a generated package (no adapter.py)")
    sys.path.insert(0, str(path.parent))
    try:
        module = importlib.import_module(path.name)
    except Exception as exc:  # noqa: BLE001 - any import failure is a configuration error
        raise ConfigError(f"cannot import {path.name} from {path.parent}: {exc}") from None
    found = {
        name: obj
        for name, obj in inspect.getmembers(module, inspect.isclass)
        if issubclass(obj, OrsAdapter) and not issubclass(obj, SelfScoring)
    }
    if class_name is not None:
        if class_name not in found:
            raise ConfigError(f"no adapter class {class_name!r}; the package has {sorted(found)}")
        return found[class_name]
    if len(found) != 1:
        raise ConfigError(f"the package has adapters {sorted(found)}; pick one with --env-class")
    return next(iter(found.values()))


def check_endpoint(endpoint: str, key: str) -> None:
    """Fail early when nothing answers at ``endpoint``, or when it refuses the key (a
    server that lacks ``/models`` is fine)."""
    import openai

    from orsgen.eval.conversation import server_message

    client = openai.OpenAI(base_url=endpoint, api_key=key, timeout=30.0, max_retries=1)
    try:
        client.models.list()
    except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        said = server_message(exc)
        raise ConfigError(
            f"endpoint {public_url(endpoint)} refused the key (HTTP {exc.status_code}"
            f"{': ' + said if said else ''}); give the right one with {KEY_OPTION}"
        ) from None
    except openai.APIStatusError:
        return
    except openai.APIError as exc:
        raise ConfigError(f"endpoint {public_url(endpoint)} does not answer: {exc}") from None


def _compare(args: argparse.Namespace) -> int:
    a, b = (load_summary(Path(p)) for p in args.compare)
    print(format_comparison(compare(a, b, seed=args.seed or 0, force=args.force)))
    return EXIT_OK


def _pass_keys(figures: dict[str, Any]) -> dict[str, Any]:
    """pass@k figures in the order of k (1, 2, ..., 10), not of the keys' text."""
    return {k: figures[k] for k in sorted(figures, key=int)}


def _evaluate(args: argparse.Namespace) -> EvalResult:
    """Everything up to the first rollout raises ConfigError / EvalConfigError."""
    if not args.dir or not args.endpoint or not args.model:
        raise ConfigError("orsgen eval needs DIR, --endpoint and --model (or --compare A B)")
    secrets = secret_pairs(args.secret)  # UsageError (one line, exit 2) before any network
    klass = load_adapter(args.dir, args.env_class)
    split = args.split or klass.DEFAULT_SPLIT
    base_url = args.base_url[0] if args.base_url and len(args.base_url) == 1 else args.base_url
    key = args.endpoint_api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
    check_endpoint(args.endpoint, key)

    def say_start(config: EvalConfig) -> None:
        print(
            f"evaluating {config.model} on split {config.split!r} of {config.environment}: "
            f"{plural(len(config.task_indices or ()), 'task')} x n={config.n}",
            file=sys.stderr,
        )

    try:
        return evaluate(
            klass,
            config_of(args, split),
            concurrency=args.concurrency,
            rollout_timeout=args.rollout_timeout,
            endpoint_api_key=key,
            out=args.out,
            resume=args.resume,
            progress=not args.no_progress,
            base_url=base_url,
            api_key=args.api_key,
            secrets=secrets,
            on_start=say_start,
            **_upload(args),
        )
    except EvalConfigError as exc:
        # The library names its parameters; the command names its options.
        raise ConfigError(_as_options(str(exc))) from None


def config_of(args: argparse.Namespace, split: str) -> EvalConfig:
    """The :class:`EvalConfig` of ``orsgen eval``'s arguments (``split``: ``--split`` or
    the package's default), through evaluate's own shorthand (its keywords are these
    options' names); raises :class:`EvalConfigError` naming the field."""
    return config_from_keywords({**{k: getattr(args, k) for k in SHORTHAND}, "split": split})


_OPTION_WORDS = {
    r"pass one as split=": "pass one with --split",
    r"(?<![\w-])(task_)?indices\b": "--indices",
    r"(?<![\w-])num_tasks\b": "--num-tasks",
}


def _as_options(message: str) -> str:
    for words, option in _OPTION_WORDS.items():
        message = re.sub(words, option, message)
    return message


def _run(args: argparse.Namespace) -> int:
    if args.compare:
        return _compare(args)
    result = _evaluate(args)
    if args.upload_run:
        _report_upload(args.upload_run)
    s = result.summary
    brief = {k: s[k] for k in ("split", "rollouts", "verdicts", "coverage", "mean_reward")}
    print(json.dumps({**brief, "pass_at_k": _pass_keys(s["pass_at_k"])}))
    if s["n"] >= 2:
        share = s["zero_variance_share"][str(s["n"])]
        shown = "n/a (no task had all its samples scored)" if share is None else f"{share:.3f}"
        print(f"zero-variance share at G={s['n']}: {shown}")
    if result.out is not None:
        print(f"results in {result.out}: results.jsonl, summary.json, report.md", file=sys.stderr)
        print(f"read every rollout: orsgen view {shlex.quote(str(result.out))}", file=sys.stderr)
    if args.min_coverage is not None and result.coverage < args.min_coverage:
        print(
            f"error: coverage {result.coverage:.3f} is below --min-coverage {args.min_coverage}",
            file=sys.stderr,
        )
        return EXIT_COVERAGE
    return EXIT_OK


def _upload(args: argparse.Namespace) -> dict[str, Any]:
    """The adapter keyword of ``--upload-run`` (none without it)."""
    if not args.upload_run:
        return {}
    from orsgen.runtime.upload import UploadRun

    stage = args.upload_stage
    return {"upload_run": UploadRun(args.upload_run, model_name=args.model, training_stage=stage)}


def _report_upload(run_name: str) -> None:
    """Flush the uploads (bounded) and say how many went to the runs UI."""
    from orsgen.runtime.upload.uploader import EXIT_BUDGET, uploader

    up = uploader()
    done = up.flush(EXIT_BUDGET)
    left = "" if done else f"; gave up waiting after {EXIT_BUDGET:g} s"
    print(
        f"runs UI: {up.uploaded} rollouts uploaded to run {run_name!r}, "
        f"{up.dropped_total} dropped{left}",
        file=sys.stderr,
    )


def main(argv: Sequence[str]) -> int:
    args = _parser().parse(list(argv))
    try:
        return _run(args)
    except (ConfigError, EvalConfigError, UsageError) as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_USAGE

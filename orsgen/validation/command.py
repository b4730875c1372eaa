"""``orsgen validate TARGET [options]``: the command line over :func:`orsgen.validate`."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import warnings
from collections.abc import Sequence

from orsgen.arguments import Failed, Parser, UsageError, at_least, environment_options, number
from orsgen.arguments import output, rollout_options, secret_pairs, seconds
from orsgen.snapshot.errors import TargetError
from orsgen.validation import report
from orsgen.validation.run import DEFAULT_CONCURRENCY, DEFAULT_NUM_TASKS, DEFAULT_TIMEOUT, validate
from orsgen.wording import plural


def _num_tasks(text: str) -> int | None:
    if text == "all":
        return None
    try:
        return at_least(1)(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"takes a whole number of at least 1 or 'all', got {text!r}"
        ) from None


def _reward_range(text: str) -> tuple[float, float]:
    parts = text.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"takes LO,HI (0,1), got {text!r}")
    low, high = number(parts[0]), number(parts[1])
    if low > high:
        raise argparse.ArgumentTypeError(f"LO must not be above HI, got {text!r}")
    return low, high


def parser() -> Parser:
    p = Parser(
        prog="orsgen validate",
        description="Probe an environment for the defects that waste a training run: a "
        "degenerate action that earns the reward, rewards that change, a task in two splits, "
        "state shared between sessions, server failures on schema-valid calls, NaN rewards, "
        "undocumented tools. Exit 1 when a finding reaches --fail-on.",
    )
    p.add_argument(
        "target",
        metavar="TARGET",
        help="catalog name (namespace/name), URL, Python file, or a generated package "
        "directory (with --base-url)",
    )
    environment_options(
        p,
        base_url="the one a package directory TARGET recorded; for such a TARGET only",
        target=True,
    )
    p.add_argument(
        "--split", action="append", help="split to probe (repeatable; default every split)"
    )
    p.add_argument(
        "--num-tasks",
        type=_num_tasks,
        default=DEFAULT_NUM_TASKS,
        metavar="N",
        help=f"the first N tasks of each split (default {DEFAULT_NUM_TASKS}; 'all' for every task)",
    )
    rollout_options(p, DEFAULT_CONCURRENCY, "sessions", package=False)
    p.add_argument(
        "--reward-range",
        type=_reward_range,
        default=(0.0, 1.0),
        metavar="LO,HI",
        help="rewards the reward functions expect, bounds included (default 0,1)",
    )
    p.add_argument("--out", metavar="DIR", help="write validation.json and report.md here")
    p.add_argument(
        "--fail-on",
        choices=("error", "warning"),
        default="error",
        help="exit 1 when a finding reaches this severity (default error)",
    )
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the degenerate arguments (default 0)"
    )
    p.add_argument(
        "--timeout",
        type=seconds,
        default=DEFAULT_TIMEOUT,
        help=f"seconds per request (default {DEFAULT_TIMEOUT:g})",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse(list(argv))
    out = output(args.out, "--out") if args.out else None

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"orsgen validate: {message}", file=sys.stderr, flush=True)

    # stdout is the table's: whatever else writes there meanwhile (a served file's own
    # prints, the SDK server's log, which binds sys.stdout when it loads) goes to stderr.
    try:
        with contextlib.redirect_stdout(sys.stderr):
            result = validate(
                args.target,
                env_name=args.env_name,
                base_url=args.base_url,
                api_key=args.api_key,
                secrets=secret_pairs(args.secret),
                toolset=args.toolset,
                splits=args.split,
                num_tasks=args.num_tasks,
                concurrency=args.concurrency,
                pass_threshold=args.pass_threshold,
                reward_range=args.reward_range,
                seed=args.seed,
                timeout=args.timeout,
                out=out,
                progress=progress,
            )
    except TargetError as exc:
        # The error is the last line: what the runtime loop was still doing for the target
        # (an SDK retry the timeout cut short) is cancelled at exit, and its complaints (a
        # coroutine never awaited, a task destroyed pending) would follow it.
        warnings.simplefilter("ignore")
        logging.getLogger("asyncio").disabled = True
        sys.unraisablehook = lambda _unraisable: None
        raise UsageError(str(exc)) from None
    except KeyboardInterrupt:
        if out is not None:
            print(
                f"orsgen validate: what was found so far is in {out}", file=sys.stderr, flush=True
            )
        raise
    for line in report.table(result):
        print(line)
    if out is not None:
        progress(f"wrote {out / report.VALIDATION_FILE} and {out / 'report.md'}")
    counts = result.counts()
    if result.failed(args.fail_on):
        raise Failed(
            f"{plural(counts['error'], 'error')} and {plural(counts['warning'], 'warning')} "
            f"(--fail-on {args.fail_on})"
        )
    return 0

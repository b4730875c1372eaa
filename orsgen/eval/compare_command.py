"""``orsgen compare RUN_A RUN_B [RUN_C ...]`` (alias ``orsgen eval --compare``): exit 0 with
the comparison on stdout, 2 for runs that do not compare (one line)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from orsgen.arguments import Parser, UsageError
from orsgen.eval.compare import FORMATS, compare_runs, format_comparison, load_summary
from orsgen.rundir import RUN_FILE


def parser() -> Parser:
    p = Parser(
        prog="orsgen compare",
        description="Compare evaluation runs, the first the baseline: each run's figures, and "
        "each against it on their shared tasks, paired.",
    )
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directories or their run.json")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="md",
        help="md (default), json (only the document on stdout) or csv",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="compare runs that differ in environment, split, tools, -n, --max-turns or "
        "--pass-threshold",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seeds the random sign flips past 20 differing tasks (default 0)",
    )
    return p


def main(argv: Sequence[str]) -> int:
    """Print the comparison; warnings go to stderr but with ``md``, which opens with them."""
    args = parser().parse(list(argv))
    if len(args.runs) < 2:
        raise UsageError("takes two runs or more: RUN_A RUN_B [RUN_C ...]")
    runs = [Path(p).parent if Path(p).name == RUN_FILE else Path(p) for p in args.runs]
    found = compare_runs(
        [load_summary(r) for r in runs], [str(r) for r in runs], args.seed, args.force
    )
    warnings: list[str] = found["warnings"] if args.format != "md" else []
    for said in warnings:
        print(f"warning: {said}", file=sys.stderr)
    print(format_comparison(found, args.format))
    return 0

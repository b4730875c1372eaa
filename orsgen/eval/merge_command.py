"""``orsgen merge SHARD... --out RUN`` (alias ``orsgen eval --merge``): exit 0 when the merge
is written (or was already), 1 when ``--min-coverage`` is not met, 2 for shards that do not
merge (one line)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from orsgen.arguments import Parser, in_range, needs, run_directory
from orsgen.eval.command import EXTRA, ran
from orsgen.eval.merge import merge_shards


def parser() -> Parser:
    p = Parser(
        prog="orsgen merge",
        description="Merge the shards of one run (orsgen eval --shard I/N) into one run "
        "directory, as the run unsharded would have written it.",
    )
    p.add_argument("shards", nargs="+", metavar="SHARD", help="the shards' run directories")
    p.add_argument("--out", required=True, help="the merged run's directory")
    p.add_argument("--partial", action="store_true", help="allow missing shards")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace what --out holds (another run, or a merge of other shards)",
    )
    p.add_argument(
        "--min-coverage", type=in_range(0.0, 1.0), help="exit 1 when coverage is lower (0 to 1)"
    )
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse(list(argv))
    needs("eval", EXTRA)
    out = run_directory(args.out, "--out")
    merged = functools.partial(
        merge_shards, args.shards, out, partial=args.partial, force=args.force
    )
    # A merge is completed by the same merge (it takes no --resume).
    kept = f"; {args.out} is unfinished: run the same merge again to complete it"
    return ran(merged, "merge", kept, args.min_coverage)

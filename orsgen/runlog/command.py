"""``orsgen export RUN --format inspect|parquet -o FILE``. Exit codes: 0 when written, 2 when
RUN cannot be read or the format's library is missing (one line)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from orsgen.arguments import Parser, UsageError, output
from orsgen.runlog.export import FORMATS, export
from orsgen.runlog.open import open_run


def parser() -> Parser:
    p = Parser(
        prog="orsgen export",
        description="Write a run (an evaluation, a merged run, a replay or training "
        "trajectories) as an Inspect log (.eval) or a Parquet file, one sample or row per rollout.",
    )
    p.add_argument("run", metavar="RUN", help="a run directory, or a trajectory file or directory")
    p.add_argument("--format", required=True, choices=FORMATS, help="inspect (.eval) or parquet")
    p.add_argument("-o", "--out", required=True, metavar="FILE", help="where to write it")
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse(list(argv))
    output(args.out, "-o")
    try:
        count = export(open_run(args.run), args.format, Path(args.out))
    except OSError as exc:  # the file cannot be written there
        raise UsageError(str(exc)) from None
    print(f"wrote {args.out}: {count} rollouts", file=sys.stderr)
    return 0

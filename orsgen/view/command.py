"""``orsgen view RUN [-o FILE.html]``. Exit codes: 0 when the page was written, 2 when RUN
holds no run or the page cannot be written there (one line, ``orsgen view: error: ...``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from orsgen.arguments import Parser, UsageError, output
from orsgen.view import write_view


def parser() -> Parser:
    p = Parser(
        prog="orsgen view",
        description="Write one self-contained HTML page (no server, no network) to read an "
        "evaluation run or training trajectories: a grid of tasks by samples, filters, and "
        "every rollout's transcript.",
    )
    p.add_argument(
        "run",
        metavar="RUN",
        help="an `orsgen eval --out` directory, or a trajectory JSONL file or directory",
    )
    p.add_argument(
        "-o",
        "--out",
        metavar="FILE.html",
        help="where to write the page (default: RUN/view.html for a directory, "
        "RUN with .html for a file; its directory must exist unless it is inside the "
        "working directory)",
    )
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse(list(argv))
    if args.out is not None:
        output(args.out, "-o")
    try:
        path = write_view(args.run, args.out)
    except OSError as exc:  # the page cannot be written there
        raise UsageError(str(exc)) from None
    print(f"wrote {path}; open it in a browser (file://{path.resolve()})", file=sys.stderr)
    return 0

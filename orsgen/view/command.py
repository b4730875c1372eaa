"""``orsgen view RUN [-o FILE.html]``: the command line over :func:`orsgen.view.write_view`.

Exit codes: 0 when the page was written, 2 when RUN holds no run (one line on stderr)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from orsgen.view import ViewError, write_view

EXIT_OK, EXIT_USAGE = 0, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
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
        "RUN with .html for a file)",
    )
    return p


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    try:
        path = write_view(args.run, args.out)
    except (ViewError, OSError) as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {path}; open it in a browser (file://{path.resolve()})", file=sys.stderr)
    return EXIT_OK

"""``orsgen sft RUN_DIR [RUN_DIR ...] -o OUT``: the command line over
:func:`orsgen.eval.sft.export`.

Exit codes: 0 when OUT was written, 2 for runs that cannot make a dataset as asked (one
line on stderr; nothing written)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

from orsgen.eval.sft import CARD_FILE, SftError, export

EXIT_OK, EXIT_USAGE = 0, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="orsgen sft",
        description="Turn the passing rollouts of orsgen eval runs into a dataset for TRL's "
        "SFTTrainer (conversational tool-calling format, saved with save_to_disk, with a "
        "dataset card).",
    )
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="orsgen eval run directories")
    p.add_argument("-o", "--out", required=True, help="the dataset directory to write (new)")
    p.add_argument(
        "--min-reward",
        type=float,
        help="keep scored rollouts with at least this reward (default: each run's pass "
        "threshold)",
    )
    p.add_argument(
        "--per-task", type=int, metavar="K", help="at most K rollouts per task, shortest first"
    )
    p.add_argument(
        "--allow-split",
        action="append",
        default=[],
        metavar="NAME",
        help="use runs of this held-out split anyway (repeatable; default: only the "
        "package's training split)",
    )
    return p


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    try:
        logging: Any = importlib.import_module("datasets.utils.logging")  # no type information
        logging.disable_progress_bar()  # one line of output, not save_to_disk's bar
        chosen = export(
            args.runs,
            args.out,
            min_reward=args.min_reward,
            per_task=args.per_task,
            allow_splits=args.allow_split,
        )
    except SftError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_USAGE
    tasks = len(chosen.kept_per_task())
    print(
        f"wrote {len(chosen.rows)} rows ({tasks} tasks) from {len(chosen.runs)} run(s) to "
        f"{args.out} (dataset card: {CARD_FILE})"
    )
    return EXIT_OK

"""``orsgen sft RUN_DIR [RUN_DIR ...] -o OUT``: the command line over
:func:`orsgen.eval.sft.export`.

Exit codes: 0 when OUT was written, 2 for runs that cannot make a dataset as asked (one
line on stderr, ``orsgen sft: error: ...``; nothing written)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from orsgen.arguments import Parser, UsageError, at_least, number, output
from orsgen.eval.sft import CARD_FILE, SftError, export


def parser() -> Parser:
    p = Parser(
        prog="orsgen sft",
        description="Turn the passing rollouts of orsgen eval runs into a dataset for TRL's "
        "SFTTrainer (conversational tool-calling format, saved with save_to_disk, with a "
        "dataset card).",
    )
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="orsgen eval run directories")
    p.add_argument(
        "-o",
        "--out",
        required=True,
        help="the dataset directory to write (new; its directory must exist unless it is "
        "inside the working directory)",
    )
    p.add_argument(
        "--min-reward",
        type=number,
        help="keep scored rollouts with at least this reward (default: each run's pass "
        "threshold)",
    )
    p.add_argument(
        "--per-task",
        type=at_least(1),
        metavar="K",
        help="at most K rollouts per task, shortest first",
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
    args = parser().parse(list(argv))
    output(args.out, "-o")
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
        raise UsageError(str(exc)) from None
    tasks = len(chosen.kept_per_task())
    print(
        f"wrote {len(chosen.rows)} rows ({tasks} tasks) from {len(chosen.runs)} run(s) to "
        f"{args.out} (dataset card: {CARD_FILE})"
    )
    return 0

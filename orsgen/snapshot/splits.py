"""The default split (environments often have no ``train``): the existing package's, else
``train``, else the only one, else the first listed, with a line saying so (and, for a split
held out by its name, that training on it contaminates later evaluations). Only a named
split that does not exist is an error."""

from __future__ import annotations

import re
from collections.abc import Sequence

from orsgen.snapshot.errors import TargetError

DEFAULT_SPLIT = "train"
# Words that mark a split held out for evaluation, alone or as a word of its name.
HELD_OUT = frozenset(
    {"test", "eval", "evaluation", "valid", "validation", "val", "dev", "holdout", "heldout"}
)
# One of them as a word, with a plural or a "set" ending: tests, devset, eval_sets.
_HELD_OUT_WORD = re.compile(f"(?:{'|'.join(sorted(HELD_OUT))})(?:set)?s?")


def held_out(split: str) -> bool:
    """Whether a word of ``split``'s name (or two adjacent words as one: ``held-out``) is one
    of :data:`HELD_OUT`, in any case (``Test``, ``eval_set``, ``testSet``; not ``contest``)."""
    words = [w.lower() for w in re.split(r"[^a-zA-Z]+|(?<=[a-z])(?=[A-Z])", split) if w]
    joined = [a + b for a, b in zip(words, words[1:])]
    return any(_HELD_OUT_WORD.fullmatch(word) for word in words + joined)


def choose_split(
    names: Sequence[str], requested: str | None, previous: str | None = None
) -> tuple[str, str | None]:
    """The split to use (``names`` in the server's order) and, when it was not asked for
    and is not ``train``, a line saying which was chosen and why."""
    if requested is not None:
        if requested not in names:
            listed = ", ".join(sorted(names)) or "(none)"
            raise TargetError(
                f"split {requested!r} does not exist; splits: {listed}; choose one with --split"
            )
        return requested, None
    if not names:
        raise TargetError("the environment lists no splits, so it has no tasks to train on")
    # The existing package's split first: regenerating must not change it behind the user.
    if previous in names:
        return str(previous), None
    if DEFAULT_SPLIT in names:
        return DEFAULT_SPLIT, None
    chosen, warning = names[0], ""
    if held_out(chosen):
        warning = (
            f"; {chosen!r} is held out by its name: training on it contaminates later "
            "evaluations (orsgen sft and pairs refuse its runs without --allow-split)"
        )
    if len(names) == 1:
        only = f"using {chosen!r}, the only split"
        return chosen, f"no --split given and no {DEFAULT_SPLIT!r} split: {only}{warning}"
    return chosen, (
        f"no --split given and no {DEFAULT_SPLIT!r} split: using {chosen!r}, the first of "
        f"{len(names)} splits ({', '.join(names)}); choose another with --split{warning}"
    )

"""The default split (environments often have no ``train``): the existing package's, else
``train``, else the only one, else the first listed, with a line saying so. Only a named
split that does not exist is an error."""

from __future__ import annotations

from collections.abc import Sequence

from orsgen.snapshot.errors import TargetError

DEFAULT_SPLIT = "train"


def choose_split(
    names: Sequence[str], requested: str | None, previous: str | None = None
) -> tuple[str, str | None]:
    """The split to use (``names`` in the server's order) and, when it was not asked for
    and is not ``train``, a line for the user saying which was chosen and why."""
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
    if len(names) == 1:
        only = f"using {names[0]!r}, the only split"
        return names[0], f"no --split given and no {DEFAULT_SPLIT!r} split: {only}"
    return names[0], (
        f"no --split given and no {DEFAULT_SPLIT!r} split: using {names[0]!r}, the first of "
        f"{len(names)} splits ({', '.join(names)}); choose another with --split"
    )

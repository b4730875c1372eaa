"""The runtime drift guard: does the live environment still offer the tools the
adapter was generated from?

The generated class carries ``TOOLS_SHA256``, a hash of the snapshot's tool surface
(``{"tools": shared, "task_tools": task-specific}``), and its package ships the
snapshot beside the code. On the first session a class opens in a process, the
runtime lists that session's tools (``GET /{env}/task_tools``, one extra request per
process), rebuilds the same hash from what it can observe and, when it differs,
names what changed: a warning once, or :class:`ToolDriftError` with ``strict=True``.

The hash functions live in the neutral ``orsgen.canonical``, so the runtime computes
exactly what the snapshotter stored without importing the generator.
"""

from __future__ import annotations

import json
import sys
import threading
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from orsgen.canonical import sha256_of, spec_dict
from orsgen.canonical import tools_sha256 as tools_sha256
from orsgen.jsonobject import as_array, as_object, is_object
from orsgen.runtime.errors import OrsRuntimeError
from orsgen.runtime.transport.process import Records, current


class ToolDriftWarning(UserWarning):
    """The live environment's tools differ from the adapter's snapshot."""


class ToolDriftError(OrsRuntimeError):
    """Raised by ``reset()`` of a ``strict=True`` adapter whose environment has drifted."""


def _owner(cls: type) -> type | None:
    """The generated class in ``cls``'s MRO (the one that defines ``TOOLS_SHA256``)."""
    for klass in cls.__mro__:
        if "TOOLS_SHA256" in vars(klass) and vars(klass)["TOOLS_SHA256"]:
            return klass
    return None


def snapshot_environment(cls: type) -> dict[str, Any] | None:
    """The ``environment`` section of the snapshot.json that sits beside the generated class."""
    owner = _owner(cls)
    if owner is None:
        return None
    module = sys.modules.get(owner.__module__)
    path = getattr(module, "__file__", None)
    if not path:
        return None
    file = Path(path).with_name("snapshot.json")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        env = data["environment"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return dict(env) if is_object(env) else None


def _differs(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    parts: list[str] = []
    if a.get("description") != b.get("description"):
        parts.append("description")
    if a.get("input_schema") != b.get("input_schema"):
        old = as_object(as_object(a.get("input_schema")).get("properties"))
        new = as_object(as_object(b.get("input_schema")).get("properties"))
        gone = sorted(set(old) - set(new))
        added = sorted(set(new) - set(old))
        changed = sorted(k for k in set(old) & set(new) if old[k] != new[k])
        detail: list[str] = []
        if gone:
            detail.append("removed " + ", ".join(gone))
        if added:
            detail.append("added " + ", ".join(added))
        if changed:
            detail.append("changed " + ", ".join(changed))
        if as_object(a.get("input_schema")).get("required") != as_object(b.get("input_schema")).get(
            "required"
        ):
            detail.append("required list changed")
        parts.append("schema (" + "; ".join(detail) + ")" if detail else "schema")
    if a.get("property_order") != b.get("property_order") and len(parts) == 0:
        parts.append("parameter order")
    return " and ".join(parts)


def compare(
    snapshot_env: Mapping[str, Any],
    expected_sha: str,
    live_specs: Iterable[Any],
    split: str,
    index: int | None,
) -> list[str]:
    """What changed between the snapshot and a live session's tool list; empty when
    the hashes agree.

    A session lists the shared tools plus *its own task's* tools, so a snapshot task
    tool that this task does not offer counts as removed only when the snapshot was
    probed on this very task.
    """
    shared = {t["name"]: t for t in as_array(snapshot_env.get("tools"))}
    task = {t["name"]: t for t in as_array(snapshot_env.get("task_tools"))}
    probed = _was_probed(snapshot_env, split, index)
    live = {d["name"]: d for d in (spec_dict(s) for s in live_specs)}

    live_shared = [live[n] for n in sorted(live) if n in shared]
    live_task = [live[n] for n in sorted(live) if n not in shared]
    if not probed:  # unobservable from this task: assume unchanged
        live_task += [task[n] for n in sorted(task) if n not in live]
    live_task.sort(key=lambda t: t["name"])
    if sha256_of({"tools": live_shared, "task_tools": live_task}) == expected_sha:
        return []
    return _named_changes(shared, task, live, probed, split, index) or [
        "the tool list differs from the snapshot (hash mismatch)"
    ]


def _was_probed(snapshot_env: Mapping[str, Any], split: str, index: int | None) -> bool:
    """Whether the snapshot's task-tool probe opened a session on this very task."""
    probe = as_object(snapshot_env.get("task_tools_probe"))
    return (
        index is not None
        and bool(probe.get("enabled"))
        and probe.get("split") == split
        and index in (probe.get("indices") or [])
    )


def _named_changes(
    shared: Mapping[str, Any],
    task: Mapping[str, Any],
    live: Mapping[str, Any],
    probed: bool,
    split: str,
    index: int | None,
) -> list[str]:
    """Each tool added, changed or removed between the snapshot (``shared`` and ``task``
    tools, by name) and a live session's tools (``live``)."""
    changes: list[str] = []
    for name in sorted(live):
        known = shared.get(name) or task.get(name)
        if known is None and not probed and index is not None:
            # Possibly a task tool of a task the snapshot never probed, not a server change.
            changes.append(
                f"tool {name!r} added (task {index} of split {split!r} was not probed when "
                f"the snapshot was taken; if it is a task tool of this task, regenerate with "
                f"--probe-index {index})"
            )
        elif known is None:
            changes.append(f"tool {name!r} added")
        else:
            how = _differs(known, live[name])
            if how:
                changes.append(f"tool {name!r} changed its {how}")
    for name in sorted(shared):
        if name not in live:
            changes.append(f"tool {name!r} removed")
    if probed:
        for name in sorted(task):
            if name not in live:
                changes.append(f"task tool {name!r} removed")
    return changes


class DriftState:
    """What this process knows about one generated class's live tools."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.checked = False
        self.changes: list[str] | None = None  # None: not known (yet)
        self.warned = False


class Verdicts(Records[tuple[type, str], DriftState]):
    """The process's drift states by generated class and server URL (a
    :meth:`Process.part`): with several servers, each one's tools are checked."""


def _state(owner: type, url: str) -> DriftState:
    return current().part(Verdicts).get((owner, url), DriftState)


def forget() -> None:
    """Forget every verdict: the next session of each class checks its tools again."""
    current().part(Verdicts).clear()


def drifted() -> bool:
    """Whether the live tools of any class differ from its snapshot on any server, in this
    process."""
    return any(state.changes for _key, state in current().part(Verdicts).items())


def claim_check(cls: type, url: str = "") -> bool:
    """True exactly once per class, server and process: the caller makes the one extra
    request. False when the class has no snapshot to compare with."""
    owner = _owner(cls)
    if owner is None:
        return False
    state = _state(owner, url)
    with state.lock:
        if state.checked:
            return False
        state.checked = True
        return True


def record(
    cls: type, live_specs: list[Any] | None, split: str, index: int | None, url: str = ""
) -> None:
    """Compare a live tool list with the class's snapshot and remember the outcome."""
    owner = _owner(cls)
    if owner is None or live_specs is None:
        return
    env = snapshot_environment(owner)
    expected = str(vars(owner)["TOOLS_SHA256"])
    if env is None:
        changes = []  # nothing to compare with beyond the hash: say nothing rather than guess
    elif tools_sha256(env) != expected:
        changes = [
            "the snapshot.json beside the adapter does not match its TOOLS_SHA256; "
            "regenerate the package"
        ]
    else:
        changes = compare(env, expected, live_specs, split, index)
    state = _state(owner, url)
    with state.lock:
        state.changes = changes


def describe(cls: type, changes: list[str], where: str) -> str:
    owner = _owner(cls) or cls
    return (
        f"ORS environment {where} has drifted from the snapshot {owner.__name__} was generated "
        f"from: {'; '.join(changes)}. Regenerate the adapter (`orsgen check DIR --live` shows "
        "the full diff)."
    )


def enforce(cls: type, strict: bool, where: str, url: str = "") -> None:
    """Warn once per class, server and process about a recorded drift; raise with
    ``strict``."""
    owner = _owner(cls)
    if owner is None:
        return
    state = _state(owner, url)
    with state.lock:
        changes = state.changes
        if not changes:
            return
        warn = not state.warned and not strict
        if warn:
            state.warned = True
    message = describe(owner, changes, where)
    if strict:
        raise ToolDriftError(message)
    if warn:
        # enforce <- AdapterRollout.open <- OrsAdapter.reset <- the caller of reset()
        warnings.warn(message, ToolDriftWarning, stacklevel=4)

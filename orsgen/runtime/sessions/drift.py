"""The runtime drift guard (docs/scale.md, "Drift guard"): the tools a session lists, compared
with the snapshot's (``orsgen.canonical``, not the generator); a warning once, or
:class:`ToolDriftError` with ``strict``.
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
from orsgen.runtime.sessions.drift_scope import (
    Finding,
    TaskKey,
    Verdict,
    expected_task_tools,
    probed_tasks,
)
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
    path = getattr(sys.modules.get(owner.__module__), "__file__", None) if owner else None
    if not path:
        return None
    try:
        env = json.loads(Path(path).with_name("snapshot.json").read_text(encoding="utf-8"))
        env = env["environment"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return dict(env) if is_object(env) else None


def _differs(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    parts = ["description"] if a.get("description") != b.get("description") else []
    if a.get("input_schema") != b.get("input_schema"):
        was, now = as_object(a.get("input_schema")), as_object(b.get("input_schema"))
        old, new = as_object(was.get("properties")), as_object(now.get("properties"))
        kinds = {
            "removed": set(old) - set(new),
            "added": set(new) - set(old),
            "changed": {k for k in set(old) & set(new) if old[k] != new[k]},
        }
        detail = [f"{kind} {', '.join(sorted(names))}" for kind, names in kinds.items() if names]
        if was.get("required") != now.get("required"):
            detail.append("required list changed")
        parts.append("schema (" + "; ".join(detail) + ")" if detail else "schema")
    if not parts and a.get("property_order") != b.get("property_order"):
        parts.append("parameter order")
    return " and ".join(parts)


def findings(
    snapshot_env: Mapping[str, Any],
    expected_sha: str,
    live_specs: Iterable[Any],
    split: str,
    index: int | None,
) -> list[Finding]:
    """Each difference between the snapshot and a live session on task ``index``."""
    shared = {t["name"]: t for t in as_array(snapshot_env.get("tools"))}
    task = {t["name"]: t for t in as_array(snapshot_env.get("task_tools"))}
    live = {d["name"]: d for d in (spec_dict(s) for s in live_specs)}
    expected = expected_task_tools(snapshot_env, split, index)
    probed = (split, index) in probed_tasks(snapshot_env)
    named = _named_changes(shared, task, live, expected, probed, split, index)
    if named:
        return named
    # Nothing named: every task tool missing here is one this task need not offer.
    live_shared = [live[n] for n in sorted(live) if n in shared]
    live_task = [live[n] for n in sorted(live) if n not in shared]
    live_task += [task[n] for n in sorted(task) if n not in live]
    live_task.sort(key=lambda t: t["name"])
    if sha256_of({"tools": live_shared, "task_tools": live_task}) == expected_sha:
        return []
    return [Finding("the tool list differs from the snapshot (hash mismatch)", False)]


def _named_changes(
    shared: Mapping[str, Any],
    task: Mapping[str, Any],
    live: Mapping[str, Any],
    expected: set[str] | None,
    probed: bool,
    split: str,
    index: int | None,
) -> list[Finding]:
    """Each tool added, changed or removed; ``expected``: the task tools this task offered when
    probed (``None``: unknown)."""
    changes: list[Finding] = []
    for name in sorted(live):
        known = shared.get(name) or task.get(name)
        if known is None and not probed and index is not None:
            # Possibly a task tool of a task the snapshot never probed, not a server change.
            text = (
                f"tool {name!r} added (task {index} of split {split!r} was not probed when "
                f"the snapshot was taken; if it is a task tool of this task, regenerate with "
                f"--probe-index {index})"
            )
            changes.append(Finding(text, False))
        elif known is None:
            changes.append(Finding(f"tool {name!r} added", False))
        elif how := _differs(known, live[name]):
            changes.append(Finding(f"tool {name!r} changed its {how}", name in shared))
        elif name not in shared and expected is not None and name not in expected:
            text = (
                f"task tool {name!r} offered on task {index}, where the snapshot's probe saw none"
            )
            changes.append(Finding(text, False))
    for name in sorted(shared):
        if name not in live:
            changes.append(Finding(f"tool {name!r} removed", True))
    for name in sorted(expected or ()):
        if name not in live:
            changes.append(Finding(f"task tool {name!r} removed", False))
    return changes


class DriftState:
    """What this process knows about one generated class's live tools on one server."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.checked = False
        self.measured: set[TaskKey] = set()
        self.probed: frozenset[TaskKey] | None = None  # read from the snapshot when needed
        self.verdict = Verdict()
        self.warned: set[str] = set()


class Verdicts(Records[tuple[type, str], DriftState]):
    """The process's drift states by generated class and server URL (a :meth:`Process.part`)."""


def _state(owner: type, url: str) -> DriftState:
    return current().part(Verdicts).get((owner, url), DriftState)


def forget() -> None:
    """Forget every verdict: the next session of each class checks its tools again."""
    current().part(Verdicts).clear()


def claim_check(cls: type, url: str = "", task: TaskKey | None = None) -> bool:
    """Whether the caller's session should list its tools: the class's first on a server in
    this process, and the first on each task the snapshot probed."""
    owner = _owner(cls)
    if owner is None:
        return False
    state = _state(owner, url)
    with state.lock:
        if not state.checked:
            state.checked = True
        elif task is None or task in state.measured:
            return False
        else:
            if state.probed is None:
                state.probed = probed_tasks(snapshot_environment(owner))
            if task not in state.probed:
                return False
        if task is not None:
            state.measured.add(task)
        return True


def record(
    cls: type, live_specs: list[Any] | None, split: str, index: int | None, url: str = ""
) -> None:
    """Compare a live tool list (of a session on task ``index``) with the class's snapshot
    and remember the findings: shared tools' for the server, task tools' for this task."""
    owner = _owner(cls)
    if owner is None or live_specs is None:
        return
    env = snapshot_environment(owner)
    expected = str(vars(owner)["TOOLS_SHA256"])
    found: list[Finding]
    if env is None:
        found = []  # nothing to compare with beyond the hash: say nothing rather than guess
    elif tools_sha256(env) != expected:
        text = (
            "the snapshot.json beside the adapter does not match its TOOLS_SHA256; "
            "regenerate the package"
        )
        found = [Finding(text, True)]
    else:
        found = findings(env, expected, live_specs, split, index)
    state = _state(owner, url)
    with state.lock:
        state.verdict.add((split, index), found)


def enforce(cls: type, strict: bool, where: str, url: str, task: TaskKey) -> bool:
    """Whether the findings on server ``url`` hold for a session on ``task``; warn when
    one of them was not yet warned about (per class and server), or raise with ``strict``."""
    owner = _owner(cls)
    if owner is None:
        return False
    state = _state(owner, url)
    with state.lock:
        changes = state.verdict.on(task)
        if not changes:
            return False
        warn = not strict and not state.warned.issuperset(changes)
        if warn:
            state.warned.update(changes)
    message = (
        f"ORS environment {where} has drifted from the snapshot {owner.__name__} was generated "
        f"from: {'; '.join(changes)}. Regenerate the adapter (`orsgen check DIR --live` shows "
        "the full diff)."
    )
    if strict:
        raise ToolDriftError(message)
    if warn:
        # enforce <- AdapterRollout.open <- OrsAdapter.reset <- the caller of reset()
        warnings.warn(message, ToolDriftWarning, stacklevel=4)
    return True

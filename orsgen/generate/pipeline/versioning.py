"""Classify how an environment changed between two snapshots, and bump the version, by the
rules of docs/generating.md ("Versioning"): what breaks code and models trained on the old tools."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import BaseModel

from orsgen.generate import ir
from orsgen.generate.typemap import short_json, tool_tree
from orsgen.snapshot.stored import Environment, stored_form

Level = Literal["unchanged", "patch", "minor", "major"]
_RANK: dict[str, int] = {"unchanged": 0, "patch": 1, "minor": 2, "major": 3}
WORDS = {"major": "breaking", "minor": "additive", "patch": "cosmetic", "unchanged": "none"}


@dataclass(frozen=True, order=True)
class Change:
    """One classified difference. ``tool`` is the wire name, or "" for non-tool facts."""

    tool: str
    level: Level
    message: str

    def line(self) -> str:
        return f"[{WORDS[self.level]}] {self.message}"


@dataclass
class Classification:
    changes: list[Change] = field(default_factory=list)

    @property
    def level(self) -> Level:
        levels: list[Level] = ["unchanged", *(c.level for c in self.changes)]
        return max(levels, key=_RANK.__getitem__)

    def report(self) -> str:
        lines: list[str] = []
        for tool, changes in itertools.groupby(sorted(self.changes), key=lambda c: c.tool):
            lines.append(f"{tool or '(environment)'}:")
            lines.extend(f"  {c.line()}" for c in changes)
        return "\n".join(lines)


def bump(version: str, level: Level) -> str:
    try:
        major, minor, patch = (int(p) for p in version.split("."))
    except ValueError:
        major, minor, patch = 1, 0, 0
    bumped = {"major": f"{major + 1}.0.0", "minor": f"{major}.{minor + 1}.0"}
    return {**bumped, "patch": f"{major}.{minor}.{patch + 1}"}.get(level, version)


def _compare_types(tool: str, param: str, old: ir.Node, new: ir.Node, out: list[Change]) -> None:
    where = f"parameter {param!r} of tool {tool!r}"
    old_hint, new_hint = ir.render(old), ir.render(new)
    if old_hint == new_hint:
        return
    old_members, new_members = ir.members(old), ir.members(new)
    # Same number of members, all of them Literals: an enum gained or lost values.
    literals = [m for m in old_members + new_members if isinstance(m, ir.LiteralOf)]
    if len(old_members) == len(new_members) and len(literals) == len(old_members) * 2:
        old_values, new_values = (
            {repr(v) for m in side if isinstance(m, ir.LiteralOf) for v in m.values}
            for side in (old_members, new_members)
        )
        for value in sorted(old_values - new_values):
            out.append(Change(tool, "major", f"{where}: enum value {value} removed"))
        for value in sorted(new_values - old_values):
            out.append(Change(tool, "minor", f"{where}: enum value {value} added"))
        return
    # Members as the hint shows them: a nested object's own fields are compared field by field.
    old_set = {ir.render(m) for m in old_members}
    new_set = {ir.render(m) for m in new_members}
    if any(isinstance(m, ir.AnyOf) for m in new_members) or old_set < new_set:
        out.append(Change(tool, "minor", f"{where}: type widened from {old_hint} to {new_hint}"))
    elif new_set < old_set:
        out.append(Change(tool, "major", f"{where}: type narrowed from {old_hint} to {new_hint}"))
    else:
        out.append(Change(tool, "major", f"{where}: type changed from {old_hint} to {new_hint}"))


def _compare_fields(
    tool: str,
    old: tuple[ir.Field, ...],
    new: tuple[ir.Field, ...],
    out: list[Change],
    prefix: str = "",
) -> None:
    old_fields, new_fields = {f.name: f for f in old}, {f.name: f for f in new}
    for name in sorted(set(old_fields) - set(new_fields)):
        out.append(Change(tool, "major", f"parameter {prefix + name!r} of tool {tool!r} removed"))
    for name in sorted(set(new_fields) - set(old_fields)):
        added = f"parameter {prefix + name!r} added to tool {tool!r}"
        if new_fields[name].required:
            out.append(Change(tool, "major", f"required {added}"))
        else:
            out.append(Change(tool, "minor", f"optional {added}"))
    for name in sorted(set(old_fields) & set(new_fields)):
        before, after = old_fields[name], new_fields[name]
        label = f"{prefix}{name}"
        where = f"parameter {label!r} of tool {tool!r}"
        if after.required and not before.required:
            out.append(Change(tool, "major", f"{where} became required"))
        elif before.required and not after.required:
            out.append(Change(tool, "minor", f"{where} became optional"))
        _compare_types(tool, label, before.type, after.type, out)
        # Nested object fields follow the same rules, one level of dotted names at a time.
        old_object, new_object = before.node, after.node
        if isinstance(old_object, ir.ObjectOf) and isinstance(new_object, ir.ObjectOf):
            if len(prefix) < 200:
                _compare_fields(tool, old_object.fields, new_object.fields, out, f"{label}.")
        if (before.description, before.title) != (after.description, after.title):
            out.append(Change(tool, "patch", f"description of {where} changed"))


def classify(old: Environment, new: Environment) -> Classification:
    result = Classification()
    out = result.changes
    old_tools = {s.name: s for s in old.all_tools}
    new_tools = {s.name: s for s in new.all_tools}
    for name in sorted(set(old_tools) - set(new_tools)):
        out.append(Change(name, "major", f"tool {name!r} removed"))
    for name in sorted(set(new_tools) - set(old_tools)):
        out.append(Change(name, "minor", f"tool {name!r} added"))
    for name in sorted(set(old_tools) & set(new_tools)):
        before, after = old_tools[name], new_tools[name]
        if before == after:
            continue
        if before.description != after.description:
            out.append(Change(name, "patch", f"description of tool {name!r} changed"))
        count = len(out)
        old_tree = tool_tree(before.input_schema, name)
        _compare_fields(name, old_tree.fields, tool_tree(after.input_schema, name).fields, out)
        if len(out) == count and before.input_schema != after.input_schema:
            message = f"schema of tool {name!r} changed in titles or annotations only"
            out.append(Change(name, "patch", message))
    out.extend(_offering_changes(old, new))
    # Another harness's tool surface: what the model learned no longer applies.
    old_set, new_set = old.identity.toolset, new.identity.toolset
    if old_set != new_set:
        out.append(Change("", "major", f"toolset changed: {old_set!r} -> {new_set!r}"))
    for key in _FACTS:
        before, after = _fact(old, key), _fact(new, key)
        if before != after:
            was, now = short_json(before, 120, True), short_json(after, 120, True)
            out.append(Change("", "patch", f"{key} changed: {was} -> {now}"))
    return result


def _offering_changes(old: Environment, new: Environment) -> list[Change]:
    """Task tools a probed task stopped or started offering, when both snapshots record them."""
    old_probe, new_probe = old.task_tools_probe, new.task_tools_probe
    if old_probe is None or new_probe is None:
        return []
    before, after = old_probe.tools_by_task, new_probe.tools_by_task
    if before is None or after is None or old_probe.split != new_probe.split:
        return []
    out: list[Change] = []
    for task in sorted(set(before) & set(after), key=int):
        for name in sorted(set(before[task]) - set(after[task])):
            out.append(
                Change(name, "major", f"task tool {name!r} no longer offered on task {task}")
            )
        for name in sorted(set(after[task]) - set(before[task])):
            out.append(Change(name, "minor", f"task tool {name!r} now offered on task {task}"))
    return out


# Facts besides the tools recorded as patch changes (not the software: the model sees none).
_FACTS = ("splits", "terminal_tool", "supports_score_group", "identity", "target")


def _fact(environment: Environment, key: str) -> Any:
    value: Any = getattr(environment, key) if key in environment.model_fields_set else None
    if isinstance(value, list):
        return [stored_form(v) for v in cast(list[BaseModel], value)]
    return stored_form(value) if isinstance(value, BaseModel) else value

"""The checks judged on what tasks show (their prompts, task specs and tools):
``empty_prompt``, ``task_index_ignored``, ``duplicate_tasks``, ``split_overlap`` and
``undocumented``."""

from __future__ import annotations

import itertools
import json
from typing import Any

from orsgen.jsonobject import as_object, is_object
from orsgen.validation.instances import resolve
from orsgen.validation.plan import Look, Observations
from orsgen.validation.result import Finding


def normalized(prompt: str) -> str:
    """Prompt text as compared: case-folded, whitespace collapsed."""
    return " ".join(prompt.casefold().split())


def empty_prompt(obs: Observations) -> list[Finding]:
    found: list[Finding] = []
    for look in obs.looks.values():
        if not look.prompt.strip() and not look.image:
            evidence = {"prompt": look.prompt, "note": "the prompt has no text and no image"}
            found.append(Finding("empty_prompt", "error", look.split, look.index, None, evidence))
    return found


def _tool_names(look: Look) -> list[str]:
    return sorted(str(t["name"]) for t in look.tools)


def by_split(obs: Observations) -> dict[str, list[Look]]:
    out: dict[str, list[Look]] = {s: [] for s in obs.splits}
    for look in sorted(obs.looks.values(), key=lambda lk: (lk.split, lk.index)):
        out.setdefault(look.split, []).append(look)
    return out


def ignored_splits(obs: Observations) -> set[str]:
    """The splits of which every probed task (two or more) has the same prompt and tools.
    Empty prompts are ``empty_prompt``'s: they say nothing of the index."""

    def shown(look: Look) -> tuple[str, list[str]]:
        return normalized(look.prompt), _tool_names(look)

    return {
        split
        for split, looks in by_split(obs).items()
        if len(looks) >= 2
        and (normalized(looks[0].prompt) or looks[0].image)
        and all(shown(lk) == shown(looks[0]) for lk in looks)
    }


def task_index_ignored(obs: Observations) -> list[Finding]:
    found: list[Finding] = []
    looks = by_split(obs)
    for split in sorted(ignored_splits(obs)):
        probed = looks[split]
        evidence = {
            "prompt": probed[0].prompt,
            "tools": _tool_names(probed[0]),
            "task_indices": [lk.index for lk in probed],
            "note": f"all {len(probed)} probed tasks of {split!r} have this prompt and these tools",
        }
        found.append(Finding("task_index_ignored", "error", split, probed[0].index, None, evidence))
    return found


def duplicate_tasks(obs: Observations) -> list[Finding]:
    """Two tasks of one split with the same prompt: one finding per later task, naming the
    first with its prompt. A split whose every task is the same is ``task_index_ignored``."""
    found: list[Finding] = []
    ignored = ignored_splits(obs)
    for split, looks in by_split(obs).items():
        if split in ignored:
            continue
        first: dict[str, Look] = {}
        for look in looks:
            key = normalized(look.prompt)  # never an empty one: that is empty_prompt's
            if key in first:
                evidence = {
                    "prompt": look.prompt,
                    "same_as": {"split": split, "task_index": first[key].index},
                }
                found.append(
                    Finding("duplicate_tasks", "warning", split, look.index, None, evidence)
                )
            elif key:
                first[key] = look
    return found


def _spec_key(spec: Any) -> str | None:
    if spec is None or (is_object(spec) and not spec):
        return None
    return json.dumps(spec, sort_keys=True, default=str)


def split_overlap(obs: Observations) -> list[Finding]:
    """A task whose normalized prompt, or task spec where the server lists specs, is also a
    task of another split: one finding per pair, naming the task of the later split (in the
    server's order) and, in its evidence, the other."""
    found: list[Finding] = []
    looks = by_split(obs)
    for split in ignored_splits(obs):  # its tasks are one task: compare that one once
        looks[split] = looks[split][:1]
    for a, b in itertools.combinations(obs.splits, 2):
        for later, earlier in itertools.product(looks.get(b, []), looks.get(a, [])):
            matched = _matched(obs, earlier, later)
            if matched is not None:
                evidence = {
                    "prompt": later.prompt,
                    "matched_on": matched,
                    "same_as": {"split": a, "task_index": earlier.index},
                }
                found.append(Finding("split_overlap", "error", b, later.index, None, evidence))
    return found


def _matched(obs: Observations, earlier: Look, later: Look) -> str | None:
    prompt = normalized(later.prompt)
    if prompt and prompt == normalized(earlier.prompt):
        return "prompt"
    specs_a, specs_b = obs.specs.get(earlier.split) or [], obs.specs.get(later.split) or []
    if earlier.index < len(specs_a) and later.index < len(specs_b):
        key = _spec_key(specs_b[later.index])
        if key is not None and key == _spec_key(specs_a[earlier.index]):
            return "task_spec"
    return None


def _described(node: Any, root: Any) -> bool:
    """Whether a schema has a description (on it, or on what its ``$ref`` names)."""
    return bool(str(resolve(node, as_object(root)).get("description") or "").strip())


def undocumented(obs: Observations) -> list[Finding]:
    """A tool with no description or with parameters without one: one finding per tool
    (shared tools and task tools alike), naming the parameters."""
    tools: dict[str, dict[str, Any]] = {}
    for look in sorted(obs.looks.values(), key=lambda lk: (lk.split, lk.index)):
        for tool in look.tools:
            tools.setdefault(str(tool["name"]), tool)
    found: list[Finding] = []
    for name in sorted(tools):
        tool = tools[name]
        schema = tool.get("input_schema")
        properties = as_object(as_object(schema).get("properties"))
        bare = [str(p) for p, node in properties.items() if not _described(node, schema)]
        no_description = not str(tool.get("description") or "").strip()
        if no_description or bare:
            evidence: dict[str, Any] = {
                "tool_description": None if no_description else tool.get("description"),
                "parameters_without_description": bare,
            }
            found.append(Finding("undocumented", "warning", None, None, name, evidence))
    return found

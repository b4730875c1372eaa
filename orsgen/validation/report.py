"""A validation's files and its stdout table: ``validation.json`` and ``report.md``, both
written whole through the run directory's owner (:mod:`orsgen.rundir`)."""

from __future__ import annotations

import json
from pathlib import Path

from orsgen.jsonobject import as_object, is_array
from orsgen.rundir import REPORT_FILE, write_json, write_whole, writing
from orsgen.validation.result import CHECKS, Finding, ValidationResult

VALIDATION_FILE = "validation.json"


def _note(finding: Finding) -> str:
    note = finding.evidence.get("note")
    if isinstance(note, str):
        return note
    same = as_object(finding.evidence.get("same_as"))
    if same:
        return f"same prompt as {same.get('split')}/{same.get('task_index')}"
    bare = finding.evidence.get("parameters_without_description")
    if is_array(bare):
        missing = ", ".join(str(p) for p in bare)
        tool = "no tool description" if finding.evidence.get("tool_description") is None else ""
        params = f"parameters without a description: {missing}" if missing else ""
        return "; ".join(p for p in (tool, params) if p)
    return ""


def table(result: ValidationResult) -> list[str]:
    """The stdout table: one line per check with its status, then one per finding."""
    width = max(len(name) for name in CHECKS)
    lines: list[str] = []
    for name, status in result.checks.items():
        reason = f"  ({status.reason})" if status.reason else ""
        lines.append(f"{name:<{width}}  {status.status}{reason}")
    if result.findings:
        lines.append("")
        lines.append("findings:")
    for f in result.findings:
        lines.append(f"  {f.severity:<7} {f.check:<{width}}  {f.where()}: {_note(f)}")
    return lines


def markdown(result: ValidationResult) -> str:
    counts = result.counts()
    lines = [
        f"# Validation of {result.environment or result.target}",
        "",
        f"- target: `{result.target}`",
        f"- findings: {counts['error']} errors, {counts['warning']} warnings",
        f"- seconds: {result.seconds:.1f}",
    ]
    if result.interrupted:
        lines.append("- **interrupted**: what was found until Ctrl-C")
    options = ", ".join(f"{k} {json.dumps(v)}" for k, v in sorted(result.options.items()))
    lines += [f"- options: {options}", "", "## Checks", "", "| check | status | reason |"]
    lines.append("|---|---|---|")
    for name, status in result.checks.items():
        lines.append(f"| `{name}` | {status.status} | {status.reason or ''} |")
    lines += ["", "## Findings", ""]
    if not result.findings:
        lines.append("None.")
    for number, f in enumerate(result.findings, 1):
        lines += [
            f"### {number}. {f.severity}: `{f.check}`, {f.where()}",
            "",
            _note(f),
            "",
            "```json",
            json.dumps(f.evidence, indent=2, sort_keys=True, default=str),
            "```",
            "",
        ]
    lines += ["## Latency (seconds)", "", "| request | count | p50 | p95 |", "|---|---|---|---|"]
    rows = [(k, v) for k, v in result.latency.items() if k != "tools"]
    rows += [(f"tool {t}", v) for t, v in sorted(result.latency.get("tools", {}).items())]
    for name, figures in rows:
        lines.append(f"| {name} | {figures['count']} | {figures['p50']} | {figures['p95']} |")
    return "\n".join(lines).rstrip() + "\n"


def write(out: Path, result: ValidationResult) -> None:
    """validation.json and report.md in ``out``, whole, one writer at a time."""
    with writing(out):
        write_json(out / VALIDATION_FILE, result.to_json())
        write_whole(out / REPORT_FILE, markdown(result))

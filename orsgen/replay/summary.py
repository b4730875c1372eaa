"""A replay run's summary.json and report.md, from its rows (:mod:`orsgen.replay.compare`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from orsgen.jsonobject import as_array, as_object
from orsgen.rundir import REPORT_FILE, write_whole

MAX_SHOWN_ROLLOUTS = 100  # changed rollouts report.md shows call by call; all are in the rows
MAX_CELL = 160  # characters of a result in report.md's tables


def _key(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"task_index": row["task_index"], "sample": row["sample"]}


def summarize(rows: Sequence[Mapping[str, Any]], facts: Mapping[str, Any]) -> dict[str, Any]:
    """summary.json: ``facts`` (the replay's run.json), then the changes of ``rows``."""
    threshold = float(facts["pass_threshold"])
    ordered = sorted(rows, key=lambda r: (r["task_index"], r["sample"]))
    replayed = [r for r in ordered if not r.get("skipped")]
    flips: dict[str, list[dict[str, Any]]] = {"pass_to_fail": [], "fail_to_pass": []}
    for r in replayed:
        if r.get("flip"):
            flips[str(r["flip"])].append(_key(r))
    kept = [r for r in replayed if not r["nondeterministic"]]
    return {
        **facts,
        "rollouts": len(ordered),
        "replayed": len(replayed),
        "changed": sum(bool(r["changed"]) for r in ordered),
        "flips": flips,
        "rewards_changed": sum(bool(r["reward_changed"]) for r in replayed),
        "call_rewards_changed": [
            {**_key(r), **x} for r in replayed for x in r.get("call_rewards_changed", [])
        ],
        "finished_elsewhere": [
            {**_key(r), **r["finished_at"]} for r in replayed if "finished_at" in r
        ],
        "outputs_changed": sum(int(r["outputs_changed"]) for r in kept),
        "refused": [{**_key(r), **x} for r in replayed for x in r["refused"]],
        "compared_by_calls": [_key(r) for r in replayed if "compared" in r],
        "nondeterministic": [_key(r) for r in ordered if r["nondeterministic"]],
        "skipped": [{**_key(r), "reason": r["reason"]} for r in ordered if r.get("skipped")],
        "rules": {
            "pass": f"reward >= pass_threshold ({threshold}), the recorded run's rule",
            "changed": "rollouts that no replay reproduces: final reward, each call's reward "
            f"(within tolerance {facts['tolerance']}, or one of them none), where the episode "
            "finished, calls the environment accepts",
            "rewards_changed": "final rewards that no replay reproduces",
            "call_rewards_changed": "calls whose reward no replay reproduces",
            "flips": "rollouts whose reward changed and that no replay passes as recorded",
            "compared_by_calls": "recorded rollouts that stopped on a limit replay cannot "
            "reproduce (a rollout deadline): compared call by call (results too), never on "
            "their final reward",
            "outputs_changed": "tool results (made both times) whose text, images or error differ",
            "refused": "calls the environment now refuses (unknown tool, invalid arguments)",
            "nondeterministic": "rollouts whose replays (--repeat) disagree among themselves: "
            "a change only when no replay reproduces the recording",
            "exit": "1 when a rollout changed; else 0",
        },
    }


def _cell(value: Any) -> str:
    text = " ".join(str(value).split()).replace("|", "\\|")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _result(side: Mapping[str, Any] | None) -> str:
    if side is None:
        return "(not made)"
    extra = [f"reward {side.get('reward')}"] + (["finished"] if side.get("finished") else [])
    extra += [f"{len(side['images'])} image(s) {', '.join(h[:8] for h in side['images'])}"] * bool(
        side.get("images")
    )
    return _cell(f"{side.get('text', '')} ({'; '.join(extra)})")


def _rollout(r: Mapping[str, Any]) -> list[str]:
    lines = [
        "",
        f"### task {r['task_index']}, sample {r['sample']}: {r['reason']}",
        "",
        "| call | tool | arguments | recorded | replayed |",
        "|---|---|---|---|---|",
    ]
    messages = [as_object(m) for m in as_array(r.get("messages"))]
    for number, (asked, answered) in enumerate(zip(messages[::2], messages[1::2]), 1):
        function = as_object(as_object(as_array(asked.get("tool_calls"))[0]).get("function"))
        recorded, replayed = (
            as_object(s) if s is not None else None for s in as_array(answered.get("sides"))
        )
        lines.append(
            f"| {number} | {_cell(function['name'])} | `{_cell(function['arguments'])}` | "
            f"{_result(recorded)} | {_result(replayed)} |"
        )
    return lines


def report(out: Path, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> None:
    """report.md: the figures, the flips, refusals and nondeterministic rollouts, then each
    changed rollout call by call, recorded and replayed side by side."""
    s, flips = summary, summary["flips"]

    def keys(found: Sequence[Mapping[str, Any]], call: bool = False) -> str:
        said = [f"task {k['task_index']} sample {k['sample']}" for k in found]
        if call:  # a call whose reward changed
            said = [
                f"{w} call {k['call']} ({k['recorded']} -> {k['replayed']})"
                for w, k in zip(said, found)
            ]
        return ", ".join(said) or "none"

    lines = [
        f"# Replay of {s['recorded_run']} on {s['environment']} ({s['split']})",
        "",
        f"- {s['replayed']} of {s['rollouts']} recorded rollouts replayed, "
        f"{s['repeat']} time(s) each; tolerance {s['tolerance']}",
        f"- rewards changed: {s['rewards_changed']}; pass to fail: {keys(flips['pass_to_fail'])}; "
        f"fail to pass: {keys(flips['fail_to_pass'])}",
        f"- call rewards changed: {keys(s['call_rewards_changed'], call=True)}",
        f"- episodes finished at another call: {len(s['finished_elsewhere'])}; tool results "
        f"changed: {s['outputs_changed']}; calls refused: {len(s['refused'])}",
        f"- compared call by call (stopped on a limit): {keys(s['compared_by_calls'])}",
        f"- nondeterministic: {keys(s['nondeterministic'])}",
    ]
    if s["skipped"]:
        lines.append(f"- not replayed: {keys(s['skipped'])}")
    if s["refused"]:
        lines += ["", "## Calls the environment now refuses", ""]
        lines += [
            f"- task {x['task_index']} sample {x['sample']}, call {x['call']} ({x['tool']}): "
            f"{_cell(x['reason'])}"
            for x in s["refused"]
        ]
    shown = [
        r for r in rows if r.get("changed") or r.get("outputs_changed") or r["nondeterministic"]
    ]
    shown.sort(key=lambda r: (r["task_index"], r["sample"]))
    if shown:
        lines += ["", "## Changed rollouts, recorded and replayed"]
        for r in shown[:MAX_SHOWN_ROLLOUTS]:
            lines += _rollout(r)
        if len(shown) > MAX_SHOWN_ROLLOUTS:
            lines += ["", f"({len(shown) - MAX_SHOWN_ROLLOUTS} more in results.jsonl)"]
    write_whole(out / REPORT_FILE, "\n".join(lines) + "\n")

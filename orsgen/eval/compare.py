"""``orsgen compare RUN_A RUN_B [RUN_C ...]``: did each run do better than the first, the
baseline, on the tasks both gave a pass@1, paired by task? docs/evaluating.md ("Compare")
states the figures and the paired sign-flip test."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from orsgen.eval.results import shortened
from orsgen.eval.summary import wilson_interval
from orsgen.identity import COMPARED, WARNED, differences
from orsgen.jsonobject import as_object, is_object
from orsgen.rundir import RUN_FILE, RunError, read_json, read_summary
from orsgen.verdict import flip
from orsgen.wording import task_list

FORMATS = ("md", "json", "csv")
EXACT_UP_TO = 20  # non-zero differences whose 2**k signs are all enumerated
PERMUTATIONS = 100_000
ALPHA = 0.05
MIN_TASKS = 6  # the fewest tasks whose smallest p-value, 2 / 2**tasks, is below ALPHA


def load_summary(run: Path) -> dict[str, Any]:
    """The ``summary.json`` of a run directory (given as the directory, its run.json, or that
    file); :class:`~orsgen.RunError` if none."""
    run = run.parent if run.name == RUN_FILE else run
    found = read_summary(run) if run.is_dir() else read_json(run)
    tasks = found.get("per_task") if is_object(found) else None
    if not isinstance(tasks, list) or not is_object(found.get("pass_at_k")):
        raise RunError(f"{run} is not the summary.json of an orsgen eval run")
    pass1 = found["pass_at_k"].get("1")
    if not isinstance(pass1, int | float) or isinstance(pass1, bool):
        raise RunError(f"{run} has no pass@1 (no task was evaluated): nothing to compare")
    listed: list[Any] = tasks  # pyright: ignore[reportUnknownVariableType]
    for t in listed:
        task = as_object(t)
        ok = isinstance(task.get("task_index"), int) and is_object(task.get("pass_at_k"))
        if not ok or not isinstance(as_object(task["pass_at_k"]).get("1", 0.0), int | float):
            raise RunError(f"{run} is not the summary.json of an orsgen eval run")
    return found


def sign_flip_p(diffs: Sequence[float], seed: int = 0) -> float | None:
    """The two-sided paired sign-flip test's p-value of ``diffs`` (``None`` for none).
    Zeros never move the sum, so up to ``EXACT_UP_TO`` non-zero ones are enumerated."""
    if not diffs:
        return None
    nonzero = [x for x in diffs if x != 0]
    if not nonzero:
        return 1.0
    return _SignFlips(nonzero if len(nonzero) <= EXACT_UP_TO else diffs, seed).p(0.0)


class _SignFlips:
    """The sign-flip test of "the differences are centred on ``shift``", for any shift: the
    sums ``A = sum s_i d_i`` and ``B = sum s_i`` over the sign vectors ``s`` (all, or
    ``PERMUTATIONS`` seeded draws), so the shifted sums are ``A - shift B``. A draw is a
    binomial per distinct difference: the same law as flipping each copy."""

    def __init__(self, diffs: Sequence[float], seed: int) -> None:
        import numpy as np

        self.d = np.asarray(diffs, dtype=float)
        self.exact = self.d.size <= EXACT_UP_TO
        if self.exact:
            a, b = np.zeros(1), np.zeros(1)
            for x in self.d:
                a, b = np.concatenate((a + x, a - x)), np.concatenate((b + 1, b - 1))
        else:
            rng = np.random.default_rng(seed)
            values, counts = np.unique(self.d, return_counts=True)
            a, b = np.zeros(PERMUTATIONS), np.zeros(PERMUTATIONS)
            for value, count in zip(values, counts):
                signed = count - 2 * rng.binomial(count, 0.5, PERMUTATIONS)
                a, b = a + value * signed, b + signed
        self.a, self.b = a, b

    def p(self, shift: float) -> float:
        import numpy as np

        x = self.d - shift
        observed = abs(float(x.sum()))
        slack = 1e-9 * float(np.abs(x).sum())  # sums equal to the observed up to rounding
        hits = int(np.count_nonzero(np.abs(self.a - shift * self.b) >= observed - slack))
        return hits / self.a.size if self.exact else (1 + hits) / (1 + PERMUTATIONS)


def paired_interval(diffs: Sequence[float], p_value: float, seed: int = 0) -> list[float] | None:
    """The 95% interval of the mean difference that inverts the sign-flip test (the shifts it
    does not reject at ``ALPHA``), by bisection. 0 is put on the side ``p_value`` puts it,
    so the interval holds 0 exactly when ``p_value`` does not reject. ``None`` with fewer
    than ``MIN_TASKS`` differences."""
    if len(diffs) < MIN_TASKS:
        return None
    test = _SignFlips(diffs, seed)
    mean = sum(diffs) / len(diffs)
    accepted = [mean] + ([0.0] if p_value >= ALPHA else [])
    rejected = [min(diffs) - 1.0, max(diffs) + 1.0] + ([0.0] if p_value < ALPHA else [])
    low, high = min(accepted), max(accepted)
    brackets = ((low, max(r for r in rejected if r < low)),
                (high, min(r for r in rejected if r > high)))  # fmt: skip
    bounds: list[float] = []
    for inside, outside in brackets:
        for _ in range(48):
            middle = (inside + outside) / 2
            if test.p(middle) >= ALPHA:
                inside = middle
            else:
                outside = middle
        bounds.append(inside)
    return bounds


def _pass1(summary: Mapping[str, Any]) -> dict[int, float]:
    """Each task's pass@1 (tasks without a sample have none)."""
    return {
        int(t["task_index"]): float(t["pass_at_k"]["1"])
        for t in summary["per_task"]
        if "1" in t["pass_at_k"]
    }


def paired(a: Mapping[str, Any], b: Mapping[str, Any], seed: int = 0) -> dict[str, Any]:
    pa, pb = _pass1(a), _pass1(b)
    shared = sorted(set(pa) & set(pb))
    diffs = [pb[i] - pa[i] for i in shared]
    p_value = sign_flip_p(diffs, seed=seed)
    return {
        "tasks": len(shared),
        "pass_at_1_diff": sum(diffs) / len(diffs) if diffs else None,
        "ci95": None if p_value is None else paired_interval(diffs, p_value, seed),
        "p_value": p_value,
        **{k: [i for i in shared if flip(pa[i], [pb[i]]) == k] for k in FLIPS},
    }


def _run(summary: Mapping[str, Any], path: str | None) -> dict[str, Any]:
    """A run's own figures (``usage``, ``cost``, ``stop``: ``None`` in older runs)."""
    return {
        "path": path,
        "model": summary.get("model"),
        "pass_at_1": summary.get("pass_at_k", {}).get("1"),
        "pass_at_1_ci95": wilson_interval(summary["pass_at_k"]["1"], len(_pass1(summary))),
        "mean_reward": summary.get("mean_reward"),
        "coverage": summary.get("coverage"),
        "usage": summary.get("usage"),
        "cost": summary.get("cost"),
        "stop": summary.get("stop"),
    }


def compare_runs(
    summaries: Sequence[Mapping[str, Any]],
    paths: Sequence[str] | None = None,
    seed: int = 0,
    force: bool = False,
) -> dict[str, Any]:
    """``{"runs": [...], "paired": [...]}`` of two or more runs' summaries (``paths``: how
    to name them), ``paired[j]`` run ``j + 1`` against the first. A run that differs from
    the first in a ``COMPARED`` field (:mod:`orsgen.identity`) raises
    :class:`~orsgen.RunError` unless ``force``, as one sharing no task with it does."""
    if len(summaries) < 2:
        raise ValueError(f"a comparison takes two runs or more, got {len(summaries)}")
    names = list(paths) if paths is not None else [None] * len(summaries)
    base = summaries[0]
    out: dict[str, Any] = {"runs": [], "paired": [], "warnings": []}
    for j, (summary, name) in enumerate(zip(summaries, names, strict=True)):
        out["runs"].append(_run(summary, name))
        if j == 0:
            continue
        differs = differences(base, summary, COMPARED)
        which = f": {names[0]} and {name}" if len(summaries) > 2 and name else ""
        who = "the runs differ" if len(summaries) == 2 else f"{_label(j)} differs from A"
        limits = differences(base, summary, WARNED)
        if limits:
            out["warnings"].append(
                f"{who} in {', '.join(limits)}, a limit that can turn a pass into a fail"
            )
        if differs and not force:
            was, now = (shortened(run.get(differs[0]), 40) for run in (base, summary))
            raise RunError(
                f"the runs differ in {differs[0]} ({was} and {now}{which}), so their "
                "figures do not compare; pass --force to compare them anyway"
            )
        pair = paired(base, summary, seed)
        if not pair["tasks"]:
            raise RunError(f"the runs share no task{which}")
        out["paired"].append({"run": name if name is not None else j, **pair})
        if differs:
            out["warnings"].append(f"{who} in {', '.join(differs)}")
    return out


def _label(j: int) -> str:
    return chr(ord("A") + j) if j < 26 else f"#{j + 1}"


def _num(x: Any, sign: str = "") -> str:
    return "n/a" if x is None else f"{x:{sign}.3f}"


def _ci(pair: Any, sign: str = "") -> str:
    return "n/a" if not pair else f"[{pair[0]:{sign}.3f}, {pair[1]:{sign}.3f}]"


def _per_rollout(usage: Any) -> list[Any]:
    return [as_object(usage).get(f"{k}_tokens_per_rollout") for k in ("prompt", "completion")]


def _tokens(usage: Any) -> str:
    if not is_object(usage):
        return "n/a"
    return " / ".join("n/a" if x is None else f"{x:.1f}" for x in _per_rollout(usage))


def _stops(stop: Any) -> str:
    if not is_object(stop):
        return "n/a"
    ranked = sorted(stop.items(), key=lambda kv: (-int(kv[1]), kv[0]))
    return ", ".join(f"{reason} {count}" for reason, count in ranked) or "none"


def _markdown(c: Mapping[str, Any]) -> str:
    lines = [f"warning: {said}" for said in c.get("warnings", [])]
    lines += [
        "| run | model | pass@1 (95% CI) | mean reward | coverage | tokens per rollout "
        "(prompt / completion) | cost | stop |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for j, r in enumerate(c["runs"]):
        name = _label(j) + (f": {r['path']}" if r["path"] else "")
        cost = "n/a" if r["cost"] is None else f"{r['cost']:.4g}"
        lines.append(
            f"| {name} | {r['model']} | {_num(r['pass_at_1'])} {_ci(r['pass_at_1_ci95'])} | "
            f"{_num(r['mean_reward'])} | {_num(r['coverage'])} | {_tokens(r['usage'])} | "
            f"{cost} | {_stops(r['stop'])} |"
        )
    for j, p in enumerate(c["paired"], start=1):
        flips = len(p["fail_to_pass"]) + len(p["pass_to_fail"])  # the non-zero differences
        how = f"exact over 2^{flips}" if flips <= EXACT_UP_TO else f"{PERMUTATIONS:,} seeded"
        p_value = "n/a" if p["p_value"] is None else f"{p['p_value']:.4g}"
        interval = (
            f"95% interval {_ci(p['ci95'], '+')}, the sign-flip test inverted"
            if p["ci95"]
            else f"no interval: {p['tasks']} tasks are too few for any p below {ALPHA}, "
            f"{MIN_TASKS} or more are needed"
        )
        lines += [
            "",
            f"{_label(j)} against A: {p['tasks']} tasks in both runs",
            f"pass@1 {_label(j)}-A: {_num(p['pass_at_1_diff'], '+')} "
            f"({interval}); p = {p_value} (paired, {how} sign flips)",
            f"fail to pass (pass rate rose): {task_list(p['fail_to_pass'])}",
            f"pass to fail (pass rate fell): {task_list(p['pass_to_fail'])}",
        ]
    return "\n".join(lines)


def _csv(c: Mapping[str, Any]) -> str:
    buffer = io.StringIO()
    out = csv.writer(buffer, lineterminator="\n")
    out.writerow(CSV_COLUMNS)
    for j, r in enumerate(c["runs"]):
        p = as_object(c["paired"][j - 1] if j else None)
        row = [_label(j), r["path"], r["model"], r["pass_at_1"]]
        row += [*(r["pass_at_1_ci95"] or [None] * 2), r["mean_reward"], r["coverage"]]
        row += [*_per_rollout(r["usage"]), r["cost"]]
        row.append(";".join(f"{k}={v}" for k, v in as_object(r["stop"]).items()))
        row += [p.get("tasks"), p.get("pass_at_1_diff"), *(p.get("ci95") or [None] * 2)]
        row += [p.get("p_value"), *(" ".join(map(str, p.get(k, []))) for k in FLIPS)]
        out.writerow(["" if x is None else x for x in row])
    return buffer.getvalue().rstrip("\n")


FLIPS = ("fail_to_pass", "pass_to_fail")
CSV_COLUMNS = (
    "run", "path", "model", "pass_at_1", "pass_at_1_ci95_low", "pass_at_1_ci95_high",
    "mean_reward", "coverage", "prompt_tokens_per_rollout", "completion_tokens_per_rollout",
    "cost", "stop", "tasks", "pass_at_1_diff", "ci95_low", "ci95_high", "p_value", *FLIPS,
)  # fmt: skip


def format_comparison(c: Mapping[str, Any], format: str = "md") -> str:
    """What ``orsgen compare --format FORMAT`` prints for a :func:`compare_runs` result:
    ``md`` (warnings first), ``json`` (only ``{"runs": ..., "paired": ...}``) or ``csv``."""
    if format == "json":
        return json.dumps({"runs": c["runs"], "paired": c["paired"]}, indent=2)
    if format == "csv":
        return _csv(c)
    if format == "md":
        return _markdown(c)
    raise ValueError(f"format is one of {', '.join(FORMATS)}, got {format!r}")

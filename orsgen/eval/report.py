"""report.md beside the results, with two PNGs (matplotlib's Agg backend: no display
needed): pass rate per task and the reward histogram."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from orsgen.eval.summary import no_gradient_tasks
from orsgen.jsonobject import as_object
from orsgen.rundir import REPORT_FILE, write_whole
from orsgen.wording import task_list

PASS_PNG = "pass_rate.png"
REWARD_PNG = "rewards.png"
MAX_BARS = 50  # tasks drawn one bar each; past this, a histogram of their pass rates


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _secs(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def _plots(out: Path, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
    except ImportError:
        return False
    plt: Any = pyplot  # matplotlib's annotations leave parts of its API unknown
    for name, fig in (
        (PASS_PNG, pass_figure(plt, summary)),
        (REWARD_PNG, reward_figure(plt, summary, rows)),
    ):
        write_whole(out / name, lambda handle: fig.savefig(handle, format="png", dpi=110))
        plt.close(fig)
    return True


def pass_figure(plt: Any, summary: Mapping[str, Any]) -> Any:
    per_task, model = summary["per_task"], summary["model"]
    values = [float(t["pass_at_k"].get("1", 0.0)) for t in per_task]
    where = f"(n={summary['n']}, split {summary['split']!r})"
    if len(per_task) > MAX_BARS:
        import numpy

        counts, edges = numpy.histogram(values, bins=20, range=(0.0, 1.0))
        title = f"{model}: pass@1 of {len(values)} tasks {where}"
        return _histogram(plt, counts, edges, "C0", ("pass@1", "tasks"), title)
    xs = [float(i) for i in range(len(per_task))]
    fig, ax = plt.subplots(figsize=(max(6.4, 0.5 * len(per_task) + 2), 4.2))
    bars = ax.bar(xs, values, width=0.7, color="C0", zorder=2)
    for x, value in zip(xs, values):  # a bar of height 0 draws nothing: mark it on the axis
        if value == 0:
            ax.hlines(0.0, x - 0.35, x + 0.35, colors="C0", linewidth=3, zorder=3)
    ax.bar_label(bars, labels=[f"{v:.2f}" for v in values], padding=2, fontsize=8)
    ax.set_xticks(xs, [f"task {t['task_index']}" for t in per_task])
    ax.tick_params(axis="x", labelrotation=45 if len(per_task) > 8 else 0, labelsize=8)
    ax.set(ylim=(-0.03, 1.12), ylabel="pass@1")  # room under 0 for the zero marks
    ax.set_title(f"{model}: pass@1 per task {where}", fontsize=10)
    ax.grid(axis="y", alpha=0.3, zorder=0)
    fig.tight_layout()
    return fig


def reward_figure(plt: Any, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> Any:
    import numpy

    rewards = numpy.fromiter(
        (float(r["reward"]) for r in rows if r["verdict"] == "scored"), dtype=numpy.float64
    )
    counts, edges = numpy.histogram(rewards[numpy.isfinite(rewards)], bins=20)
    title = f"{summary['model']}: rewards of {len(rewards)} scored rollouts"
    return _histogram(plt, counts, edges, "C1", ("reward (scored rollouts)", "rollouts"), title)


def _histogram(plt: Any, counts: Any, edges: Any, color: str, labels: Any, title: str) -> Any:
    """Counts binned by numpy (matplotlib's hist of 100,000 floats takes 25 MB and seconds):
    a bin's left edge weighted by its count draws the same."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    counts, _edges, patches = ax.hist(edges[:-1], bins=edges, weights=counts, color=color, zorder=2)
    ax.bar_label(patches, labels=[f"{int(c)}" if c else "" for c in counts], fontsize=8)
    ax.set(xlabel=labels[0], ylabel=labels[1])
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3, zorder=0)
    fig.tight_layout()
    return fig


def task_table(summary: Mapping[str, Any]) -> list[str]:
    lines = [
        "## Per task",
        "",
        "| task | samples | scored | unfinished | failed | passed | pass@1 | mean reward "
        "| prompt tokens / rollout | completion tokens / rollout |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in summary["per_task"]:
        usage = as_object(t.get("usage"))
        lines.append(
            f"| task {t['task_index']} | {t['samples']} | {t['scored']} | "
            f"{t['unfinished']} | {t['failed']} | {t['passed']} | "
            f"{_fmt(t['pass_at_k'].get('1'))} | {_fmt(t['mean_reward'])} | "
            f"{_tokens(usage.get('prompt_tokens_per_rollout'))} | "
            f"{_tokens(usage.get('completion_tokens_per_rollout'))} |"
        )
    return lines


def _tokens(value: Any) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def usage_lines(summary: Mapping[str, Any]) -> list[str]:
    usage = as_object(summary.get("usage"))
    lines: list[str] = []
    if usage:
        without = usage["rollouts_without_usage"]
        lines.append(
            f"- tokens: {usage['prompt_tokens']} prompt, {usage['completion_tokens']} completion "
            f"({_tokens(usage['prompt_tokens_per_rollout'])} and "
            f"{_tokens(usage['completion_tokens_per_rollout'])} per rollout)"
            + (f"; {without} rollouts without usage" if without else "")
        )
    price, cost = summary.get("price"), summary.get("cost")
    if price:
        shown = "n/a" if cost is None else f"{cost:.4f}"
        lines.append(f"- cost: {shown} (price {price[0]:g} / {price[1]:g} per million tokens)")
    tools: Mapping[str, Mapping[str, Any]] = summary.get("tools") or {}
    off = sum(int(t.get("off_recording") or 0) for t in tools.values())
    if off:
        lines.append(
            f"- calls off the recording: {off} (orsgen serve recorded no result for them: "
            "neither the model's mistake nor the environment's failure)"
        )
    stops: Mapping[str, int] = summary.get("stop") or {}
    if stops:
        lines.append("- stop: " + ", ".join(f"`{k}` {v}" for k, v in stops.items()))
    return lines


def tool_table(summary: Mapping[str, Any]) -> list[str]:
    tools: Mapping[str, Mapping[str, Any]] = summary.get("tools") or {}
    if not tools:
        return []
    lines = [
        "## Per tool",
        "",
        "| tool | calls | failed | by the environment | by the model | mean s | p90 s |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, t in tools.items():
        lines.append(
            f"| {name} | {t['calls']} | {t['failed']} | {t['environment_failed']} | "
            f"{t['model_failed']} | {_secs(t['mean_s'])} | {_secs(t['p90_s'])} |"
        )
    return ["", *lines]


def write(out: Path, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> None:
    plotted = _plots(out, summary, rows)
    v = summary["verdicts"]
    urls = summary["endpoint"]
    lines = [
        f"# Evaluation of {summary['model']} on {summary['environment']} ({summary['split']})",
        "",
        f"- endpoint: {urls if isinstance(urls, str) else ', '.join(urls)}; adapter {summary['adapter']} "
        f"{summary['adapter_version']}, tools {str(summary['tools_sha256'])[:12]}",
        f"- {summary['tasks']} tasks x n={summary['n']}: {summary['rollouts']} rollouts "
        f"({v['scored']} scored, {v['unfinished']} unfinished, {v['failed']} failed)",
        f"- coverage {_fmt(summary['coverage'])}; mean reward {_fmt(summary['mean_reward'])} "
        f"(95% CI {_ci(summary['mean_reward_ci95'])}, scored rollouts)",
        f"- pass@1 {_fmt(summary['pass_at_k'].get('1'))} (95% CI {_ci(summary['pass_at_1_ci95'])})",
        *_zero_variance(summary),
        *usage_lines(summary),
        "",
        "| k | pass@k | pass^k |",
        "|---|---|---|",
    ]
    for k, value in summary["pass_at_k"].items():
        lines.append(f"| {k} | {_fmt(value)} | {_fmt(summary['pass_hat_k'].get(k))} |")
    if plotted:
        what = "pass@1 per task" if len(summary["per_task"]) <= MAX_BARS else "pass@1 of the tasks"
        lines += ["", f"![{what}]({PASS_PNG})", "", f"![rewards]({REWARD_PNG})"]
    lines += [*tool_table(summary), "", *task_table(summary)]
    unscored = (r for r in rows if r["verdict"] != "scored")
    reasons = Counter(f"{r['verdict']}: {str(r.get('reason'))[:120]}" for r in unscored)
    if reasons:
        lines += ["", "## Unscored rollouts", ""]
        lines += [f"- {count} x {why}" for why, count in sorted(reasons.items())]
    write_whole(out / REPORT_FILE, "\n".join(lines) + "\n")


def _zero_variance(summary: Mapping[str, Any]) -> list[str]:
    n = int(summary["n"])
    share = summary.get("zero_variance_share", {}).get(str(n))
    if n < 2:
        return []
    tasks = no_gradient_tasks(summary["per_task"], n)
    return [
        f"- zero-variance share at G={n}: {_fmt(share)} (GRPO groups of {n} rollouts of a "
        "uniformly chosen task that all pass or all fail: no gradient); tasks with no "
        f"gradient (always or never passing): {task_list(tasks)}"
    ]


def _ci(pair: Any) -> str:
    return "n/a" if not pair else f"{pair[0]:.3f} to {pair[1]:.3f}"

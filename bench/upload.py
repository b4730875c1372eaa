"""What uploading rollouts to OpenReward's runs UI costs a run (issues 27, 34): the wall time
and CPU seconds of one ``orsgen eval`` process, run again and again in rounds that alternate
the modes, so that a busy machine slows each mode alike:

- ``none``: no upload;
- ``healthy``: ``--upload-run`` to a stand-in of the platform API (tests/platform_api.py)
  that answers each request ``--api-delay`` seconds late (0.2: a distant API);
- ``stopped``: the same, and the stand-in is killed (SIGKILL) once ``--stop-at`` of the
  run's rollouts have started on it;
- ``refusing``: the stand-in answers every request with 503.

The environment is bench/lottery_env.py on a local ORS server, the endpoint
tests/openai_standin.py (a scripted OpenAI-compatible server) answering each call
``--endpoint-delay`` seconds late (0.2: a fast model; 0 makes the run all CPU, where the
upload's CPU is the largest share of it it can be). Every rollout must be accounted for:
``orsgen eval`` scores each (no error verdict) and says how many it uploaded and dropped
(``runs UI: U rollouts uploaded ..., D dropped``), and U + D must be the number of
rollouts. Goal: each upload mode's wall time within ``--goal`` (5%) of no upload (the median
of the per-round ratios, and the ratio of the medians). The load average is recorded before
and after each run: the machine may be shared.

    python bench/upload.py [--rounds 5] [--modes none,healthy] [--api-delay 0.2] [--tasks 60] [--out DIR]

Writes ``DIR/upload.json`` and ``DIR/upload.md`` (default bench/results).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "examples")]
from orsgen.rundir import read_summary  # noqa: E402  (this checkout's orsgen)

CALLS, SIZE = 3, 512  # 8 messages of 512 bytes per rollout
MODES = ("none", "healthy", "stopped", "refusing")
KEY = "or-bench-upload-key"  # the stand-in's; checked absent from every body
UPLOADED = re.compile(r"runs UI: (\d+) rollouts uploaded to run .*?, (\d+) dropped")


def _git_commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "orsgen"], cwd=ROOT, capture_output=True, text=True
    )
    return done.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def one_run(
    mode: str, opts: argparse.Namespace, package: Path, server: str, endpoint: str, work: Path
) -> dict[str, Any]:  # fmt: skip
    """One ``orsgen eval`` process in ``mode``: its wall and CPU seconds and its accounting."""
    from platform_api import PlatformAPI

    api = None
    if mode != "none":
        api = PlatformAPI(work / f"api-{mode}-{time.monotonic_ns()}", delay=opts.api_delay)
    argv = [
        sys.executable, "-m", "orsgen", "eval", str(package),
        "--endpoint", endpoint, "--model", "standin", "--base-url", server,
        "--split", "test", "--num-tasks", str(opts.tasks), "-n", str(opts.samples),
        "--concurrency", str(opts.concurrency), "--no-progress",
        "--out", str(run_dir := work / f"run-{mode}-{time.monotonic_ns()}"),
    ]  # fmt: skip
    if api is not None:
        argv += ["--upload-run", "bench-upload"]
        env = api.child_env(KEY)
        if mode == "refusing":
            api.refuse(503)
    else:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
        env.update(OPENREWARD_DISABLE_UPDATE_CHECK="1", PYTHONPATH=str(ROOT))
    env["OPENREWARD_LOG_LEVEL"] = "ERROR"  # the SDK's per-batch lines; orsgen still says
    killer = None
    if mode == "stopped" and api is not None:
        stopping = api
        enough = int(opts.stop_at * opts.tasks * opts.samples)

        def kill_when_enough() -> None:
            while stopping.proc.poll() is None and len(stopping.rollouts()) < enough:
                time.sleep(0.2)
            if stopping.proc.poll() is None:
                os.kill(stopping.proc.pid, signal.SIGKILL)  # the API goes away mid-run

        killer = threading.Thread(target=kill_when_enough, daemon=True)
    load_before = round(os.getloadavg()[0], 2)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    child = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    if killer is not None:
        killer.start()
    out, err = child.communicate(timeout=900)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if child.returncode != 0:
        raise RuntimeError(f"{mode}: exit {child.returncode}\n{err[-3000:]}")
    summary = read_summary(run_dir)  # stdout is one readable line since issue 34
    rollouts = int(summary["rollouts"])
    verdicts = summary["verdicts"]
    row: dict[str, Any] = {
        "mode": mode,
        "wall_s": round(wall, 3),
        "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 3),
        "rollouts": rollouts,
        "verdicts": verdicts,
        "load_1m_before": load_before,
        "load_1m": round(os.getloadavg()[0], 2),
    }
    if api is not None:
        found = UPLOADED.search(err)
        if found is None:
            raise RuntimeError(f"{mode}: no 'runs UI:' line\n{err[-3000:]}")
        uploaded, dropped = int(found.group(1)), int(found.group(2))
        api.stop()  # reaped: its CPU seconds (on the same cores) count from here
        reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
        api_cpu = (reaped.ru_utime - after.ru_utime) + (reaped.ru_stime - after.ru_stime)
        arrived = [r for r in api.rollouts().values() if r["messages"]]
        bodies = "\n".join(r["body"] for r in api.requests())
        row.update(
            api_cpu_s=round(api_cpu, 3),
            uploaded=uploaded,
            dropped=dropped,
            arrived=len(arrived),
            accounted=uploaded + dropped == rollouts,
            key_in_bodies=KEY in bodies,
            warnings=err.count("uploading rollouts to the runs UI failed"),
        )
        shutil.rmtree(api.record.parent, ignore_errors=True)
    return row


def measure(opts: argparse.Namespace) -> dict[str, Any]:
    import openai_standin
    import ors_server
    from conftest import generate_and_import

    os.environ.update(
        LOTTERY_TASKS=str(opts.tasks),
        LOTTERY_CALLS=str(CALLS),
        LOTTERY_PROMPT=str(SIZE),
        LOTTERY_OUTPUT=str(SIZE),
        OPENREWARD_DISABLE_UPDATE_CHECK="1",
    )
    work = Path(tempfile.mkdtemp(prefix="orsgen-bench-upload-"))
    server = ors_server.start(BENCH / "lottery_env.py", log_dir=work)
    standin = openai_standin.start(
        work, tool="draw", calls=CALLS, size=SIZE, delay=opts.endpoint_delay
    )
    modes = [m for m in MODES if m in opts.modes.split(",")]
    runs: list[dict[str, Any]] = []
    commit = _git_commit()
    try:
        package = work / "lottery_upload"
        generate_and_import(server.url, package, class_name="LotteryEnv")
        for number in range(opts.rounds):
            # Each round runs every mode once, in an order that turns with the round.
            order = modes[number % len(modes) :] + modes[: number % len(modes)]
            for mode in order:
                row = one_run(mode, opts, package, server.url, standin.endpoint, work)
                row["round"] = number
                runs.append(row)
                print(json.dumps(row), flush=True)
    finally:
        standin.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    report = {
        "commit": commit,
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "note": opts.note,
        },
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "setup": {
            "command": "orsgen eval --split test --num-tasks T -n S --concurrency C "
            "--no-progress [--upload-run bench-upload]",
            "environment": "bench/lottery_env.py",
            "endpoint": (
                f"tests/openai_standin.py (answering {opts.endpoint_delay:g} s late)"
                if opts.endpoint_delay
                else "tests/openai_standin.py (answers at once)"
            ),
            "platform_api": f"tests/platform_api.py (answering {opts.api_delay:g} s late)",
            "goal": opts.goal,
            "tasks": opts.tasks,
            "samples": opts.samples,
            "rollouts_per_run": opts.tasks * opts.samples,
            "concurrency": opts.concurrency,
            "messages_per_rollout": 2 + 2 * CALLS,
            "message_bytes": SIZE,
            "rounds": opts.rounds,
            "stop_at": opts.stop_at,
        },
        "summary": summarise(runs, modes, opts.goal),
        "runs": runs,
    }
    out_dir = Path(opts.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "upload.json").write_text(json.dumps(report, indent=2) + "\n")
    (out_dir / "upload.md").write_text(markdown(report))
    return report


def summarise(runs: list[dict[str, Any]], modes: list[str], goal: float) -> dict[str, Any]:
    """Per upload mode against ``none``: the ratio of the medians, the per-round ratios'
    median and spread, CPU seconds, and the accounting."""
    by_round: dict[int, dict[str, dict[str, Any]]] = {}
    for r in runs:
        by_round.setdefault(r["round"], {})[r["mode"]] = r
    base = [r["wall_s"] for r in runs if r["mode"] == "none"]
    base_cpu = [r["cpu_s"] for r in runs if r["mode"] == "none"]
    # How much identical runs without upload differ: (max - min) / median, reported beside
    # the verdict (pairs run back to back, so the per-pair ratios cancel slow drift).
    noise = (max(base) - min(base)) / statistics.median(base) if base else None
    out: dict[str, Any] = {
        "none": {
            "runs": len(base),
            "wall_median_s": statistics.median(base) if base else None,
            "wall_min_max_s": [min(base), max(base)] if base else None,
            "wall_spread_over_median": round(noise, 3) if noise is not None else None,
            "cpu_median_s": statistics.median(base_cpu) if base_cpu else None,
        }
    }
    for mode in modes:
        if mode == "none":
            continue
        mine = [r for r in runs if r["mode"] == mode]
        if not mine or not base:
            continue
        walls = [r["wall_s"] for r in mine]
        ratios = [
            rows[mode]["wall_s"] / rows["none"]["wall_s"]
            for rows in by_round.values()
            if mode in rows and "none" in rows
        ]
        out[mode] = {
            "runs": len(mine),
            "wall_median_s": statistics.median(walls),
            "wall_min_max_s": [min(walls), max(walls)],
            "cpu_median_s": statistics.median(r["cpu_s"] for r in mine),
            "cpu_ms_per_rollout_over_none": round(
                1000
                * (statistics.median(r["cpu_s"] for r in mine) - statistics.median(base_cpu))
                / statistics.median(r["rollouts"] for r in mine),
                3,
            ),
            "api_cpu_median_s": statistics.median(r["api_cpu_s"] for r in mine),
            "ratio_of_medians": round(statistics.median(walls) / statistics.median(base), 4),
            "pair_ratio_median": round(statistics.median(ratios), 4),
            "pair_ratio_min_max": [round(min(ratios), 4), round(max(ratios), 4)],
            "within_goal": statistics.median(ratios) <= 1 + goal,
            "cpu_ratio_of_medians": round(
                statistics.median(r["cpu_s"] for r in mine) / statistics.median(base_cpu), 4
            ),
            "uploaded_total": sum(r["uploaded"] for r in mine),
            "dropped_total": sum(r["dropped"] for r in mine),
            "every_rollout_accounted": all(r["accounted"] for r in mine),
            "key_in_any_body": any(r["key_in_bodies"] for r in mine),
            "outage_warnings_per_run": sorted({r["warnings"] for r in mine}),
        }
    return out


def markdown(report: dict[str, Any]) -> str:
    m, s, summary = report["machine"], report["setup"], report["summary"]
    lines = [
        "# Upload to the runs UI: what it costs a run (bench/upload.py)",
        "",
        f"{report['when']}, commit {report['commit']}, {m['cpus']} CPUs ({m['note']}; load "
        f"average {m['load_average_1m_at_end']} at the end), Python {m['python']}. Each run is "
        f"one `orsgen eval` process: {s['rollouts_per_run']} rollouts ({s['tasks']} tasks x "
        f"{s['samples']} samples, concurrency {s['concurrency']}) of {s['messages_per_rollout']} "
        f"messages of {s['message_bytes']} bytes, {s['environment']} on a local ORS server, "
        f"{s['endpoint']}, uploading to {s['platform_api']}. {s['rounds']} rounds, each running "
        f"every mode once in a turning order; `stopped` kills the API once {s['stop_at']:.0%} of "
        "the rollouts have started on it; `refusing` answers 503 to everything. Wall time "
        "is of the whole process (start-up and exit included); CPU seconds are the "
        "process's user + system.",
        "",
        "| mode | runs | wall median s (min-max) | CPU median s (ms/rollout over none) | "
        "stand-in API CPU s | ratio of medians | per-round ratio median (min-max) | "
        "uploaded / dropped | all accounted |",
        "|---|---:|---|---|---:|---:|---|---|---|",
    ]
    n = summary["none"]
    if n["wall_median_s"] is not None:
        lines.append(
            f"| none | {n['runs']} | {n['wall_median_s']:.2f} ({n['wall_min_max_s'][0]:.2f}-"
            f"{n['wall_min_max_s'][1]:.2f}) | {n['cpu_median_s']:.2f} | - | 1 | - | - | - |"
        )
    verdicts = []
    for mode in MODES[1:]:
        x = summary.get(mode)
        if x is None:
            continue
        lo, hi = x["pair_ratio_min_max"]
        lines.append(
            f"| {mode} | {x['runs']} | {x['wall_median_s']:.2f} ({x['wall_min_max_s'][0]:.2f}-"
            f"{x['wall_min_max_s'][1]:.2f}) | {x['cpu_median_s']:.2f} "
            f"({x['cpu_ms_per_rollout_over_none']:+.2f}) | {x['api_cpu_median_s']:.2f} | "
            f"{x['ratio_of_medians']:.3f} | {x['pair_ratio_median']:.3f} ({lo:.3f}-{hi:.3f}) | "
            f"{x['uploaded_total']} / {x['dropped_total']} | "
            f"{'yes' if x['every_rollout_accounted'] else 'NO'} |"
        )
        shown = {True: "within", False: "NOT within"}
        verdicts.append(
            f"- {mode}: wall time {shown[x['within_goal']]} {s['goal']:.0%} of no upload "
            f"(per-round ratio median {x['pair_ratio_median']:.3f}, ratio of medians "
            f"{x['ratio_of_medians']:.3f}; identical runs without upload varied by "
            f"{n['wall_spread_over_median']:.0%} of their median); CPU seconds "
            f"{x['cpu_ratio_of_medians']:.3f} of no upload; the API key in a body: "
            f"{'YES' if x['key_in_any_body'] else 'no'}; outage warnings per run: "
            f"{x['outage_warnings_per_run']}"
        )
    runs = [
        "| round | mode | wall s | CPU s | load (1 min) before / after | uploaded / dropped |",
        "|---:|---|---:|---:|---|---|",
    ]
    for r in report["runs"]:
        moved = f"{r['uploaded']} / {r['dropped']}" if "uploaded" in r else "-"
        runs.append(
            f"| {r['round']} | {r['mode']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | "
            f"{r.get('load_1m_before', '?')} / {r['load_1m']} | {moved} |"
        )
    return (
        "\n".join(lines + [""] + verdicts + ["", "Every run, in the order run:", ""] + runs) + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--stop-at", type=float, default=0.5)
    parser.add_argument("--modes", default="none,healthy")
    parser.add_argument("--api-delay", type=float, default=0.2)
    parser.add_argument("--endpoint-delay", type=float, default=0.2)
    parser.add_argument("--goal", type=float, default=0.05)
    parser.add_argument("--note", default="2 cores shared with other agents' work")
    parser.add_argument("--out", default=str(BENCH / "results"))
    parser.add_argument(
        "--report-only", metavar="JSON", help="rewrite the summary and .md of an upload.json"
    )
    opts = parser.parse_args()
    if opts.report_only:
        report = json.loads(Path(opts.report_only).read_text())
        goal = float(report["setup"].get("goal", 0.05))
        report["summary"] = summarise(report["runs"], list(MODES), goal)
        Path(opts.report_only).write_text(json.dumps(report, indent=2) + "\n")
        Path(opts.report_only).with_suffix(".md").write_text(markdown(report))
    else:
        report = measure(opts)
    print(markdown(report))


if __name__ == "__main__":
    main()

"""``orsgen eval`` at scale (issue 29): peak memory and rollouts per second of
``orsgen.eval.evaluate`` for a number of rollouts, each 16 messages of 2 KB (a 2 KB prompt,
7 tool calls with 2 KB arguments and 2 KB results, and a 2 KB answer), writing its files
(``out=``) and writing nothing (``out=None``).

    python bench/eval_scale.py [--rollouts 1000,10000] [--repeats 1] [--modes both|write|none]
        [--concurrency 4] [--runs RUNS.jsonl] [--out DIR]
    python bench/eval_scale.py --report RUNS.jsonl... [--partial X.rss.jsonl...] [--out DIR]

The environment is bench/lottery_env.py (each task wins with its own probability) on a
local ORS server; the endpoint is tests/openai_standin.py, a scripted OpenAI-compatible
server that answers at once, so the endpoint costs nothing and what is measured is orsgen
and the environment. Each measurement runs in a process of its own (its peak RSS is that
run's): ``rollouts`` = tasks x 10 samples. Each size runs ``--repeats`` pairs, writing
nothing then writing, so that a busy machine slows both alike; the ratio is of the medians,
and each run also reports its CPU seconds per rollout (less noisy than wall time on a shared
machine) and the CPU the ORS server and the stand-in spent on it. Each child samples its RSS
every ``--sample-every`` rollouts into a side file, so a run stopped halfway still gives a
figure. Goals: peak memory flat in the number of rollouts, and rollouts per second writing
within 10% of writing nothing. Without ``--runs``, writes ``DIR/eval_scale.json`` and
``DIR/eval_scale.md`` (default bench/results) at the end; with it, each finished run is
appended to RUNS.jsonl, and ``--report`` writes the results from one or more such files.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "examples")]
from measure import commit as git_commit  # noqa: E402  (bench/measure.py)
from measure import cpu_seconds, process_cpu  # noqa: E402

SAMPLES = 10
CALLS, SIZE = 7, 2048  # 16 messages of 2 KB
for _k, _v in {
    "OPENREWARD_DISABLE_UPDATE_CHECK": "1",
    "OPENREWARD_LOG_LEVEL": "ERROR",
    "LOTTERY_CALLS": str(CALLS),
    "LOTTERY_PROMPT": str(SIZE),
    "LOTTERY_OUTPUT": str(SIZE),
}.items():
    os.environ.setdefault(_k, _v)


def _rss_mb() -> tuple[float, float]:
    """This process's resident set now and its peak (VmRSS, VmHWM), in MB."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) / 1024  # kB
    return round(found.get("VmRSS", 0.0), 1), round(found.get("VmHWM", 0.0), 1)


def child(opts: argparse.Namespace) -> None:
    """One measurement, in this process: print its figures as one JSON line. With
    ``--samples FILE`` it appends {done, seconds, cpu, rss, peak} to FILE every
    ``--sample-every`` rollouts, so that a run stopped halfway still says how its memory
    went; with ``--profile FILE`` the run is under cProfile (its stats dumped to FILE).
    """
    import threading

    from conftest import import_generated

    from orsgen.eval import EvalConfig, evaluate

    pkg = import_generated(Path(opts.package))
    out = Path(opts.write) if opts.write else None
    started, cpu0 = time.monotonic(), cpu_seconds()
    lock = threading.Lock()
    done = [0]
    side = open(opts.samples, "a", encoding="utf-8") if opts.samples else None  # noqa: SIM115

    def sample() -> None:
        rss, peak = _rss_mb()
        line = {
            "done": done[0],
            "seconds": round(time.monotonic() - started, 1),
            "cpu_seconds": round(cpu_seconds() - cpu0, 1),
            "rss_mb": rss,
            "peak_rss_mb": peak,
        }
        assert side is not None
        side.write(json.dumps(line) + "\n")
        side.flush()

    class Counted(pkg.LotteryEnv):  # type: ignore[misc, name-defined]
        """The bench's adapter: counts rollouts (one reset each) to sample RSS by."""

        def reset(self, *args: Any, **kwargs: Any) -> Any:
            with lock:
                done[0] += 1
                due = side is not None and done[0] % opts.sample_every == 0
            if due:
                sample()
            return super().reset(*args, **kwargs)

    config = EvalConfig(
        model="standin",
        endpoint=opts.endpoint,
        split="test",
        n=SAMPLES,
        num_tasks=opts.rollouts // SAMPLES,
    )
    profilers: list[Any] = []
    if opts.profile:  # every thread's own profiler: the rollouts run on worker threads
        import cProfile

        def profile_thread(*_: Any) -> None:
            profilers.append(cProfile.Profile(time.thread_time))  # CPU, not waits
            profilers[-1].enable()

        threading.setprofile(profile_thread)
        profile_thread()
    result = evaluate(
        Counted,
        config,
        adapter={"base_url": opts.base_url},
        concurrency=opts.concurrency,
        out=out,
        progress=False,
    )
    if profilers:
        import pstats

        threading.setprofile(None)
        profilers[0].disable()
        pstats.Stats(*profilers).dump_stats(opts.profile)
    cpu = cpu_seconds() - cpu0
    if side is not None:
        sample()
        side.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    figures = {
        "rollouts": len(result.records),
        "writes": out is not None,
        "concurrency": opts.concurrency,
        "coverage": result.coverage,
        "seconds": round(result.seconds, 2),
        "rollouts_per_second": round(len(result.records) / result.seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "cpu_ms_per_rollout": round(1000 * cpu / len(result.records), 3),
        "peak_rss_mb": round(peak, 1),
        "results_mb": (
            round((out / "results.jsonl").stat().st_size / 2**20, 1) if out is not None else 0
        ),
    }
    print(json.dumps(figures), flush=True)


def measure(
    levels: list[int],
    repeats: int,
    concurrency: int,
    modes: list[bool],
    runs_file: Path,
    sample_every: int,
    profile: Path | None = None,
) -> list[dict[str, Any]]:
    """Run each size ``repeats`` times in each mode of ``modes`` (alternating), each run in
    a child process; each finished run is appended to ``runs_file`` as one JSON line."""
    import openai_standin
    import ors_server
    from conftest import generate_and_import

    work = Path(tempfile.mkdtemp(prefix="orsgen-bench-eval-scale-"))
    os.environ["LOTTERY_TASKS"] = str(max(levels) // SAMPLES)
    server = ors_server.start(BENCH / "lottery_env.py", log_dir=work)
    standin = openai_standin.start(work, tool="draw", calls=CALLS, size=SIZE)
    runs: list[dict[str, Any]] = []
    commit = git_commit()
    try:
        package = work / "lottery_scale"
        generate_and_import(server.url, package, class_name="LotteryEnv")
        for rollouts in levels:
            for index, writes in enumerate(modes * repeats):
                target = work / f"run-{rollouts}"
                shutil.rmtree(target, ignore_errors=True)
                samples = runs_file.with_name(
                    f"{runs_file.stem}-{rollouts}-{index}-{'write' if writes else 'none'}.rss.jsonl"
                )
                samples.unlink(missing_ok=True)
                args = [
                    sys.executable,
                    __file__,
                    "--child",
                    "--package",
                    str(package),
                    "--endpoint",
                    standin.endpoint,
                    "--base-url",
                    server.url,
                    "--rollouts",
                    str(rollouts),
                    "--concurrency",
                    str(concurrency),
                    "--samples",
                    str(samples),
                    "--sample-every",
                    str(sample_every),
                ] + (["--write", str(target)] if writes else [])
                if profile is not None:
                    args += ["--profile", str(profile)]
                others = {
                    "ors_server": server.process.pid,
                    "standin": standin.process.pid,
                }
                before = {k: process_cpu(pid) for k, pid in others.items()}
                load = os.getloadavg()[0]
                child_run = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                print(
                    f"child pid {child_run.pid}: {rollouts} rollouts, writes={writes}",
                    flush=True,
                )
                stdout, stderr = child_run.communicate()
                if child_run.returncode != 0:
                    raise RuntimeError(stderr.decode()[-3000:])
                run = json.loads(stdout.decode().strip().splitlines()[-1])
                cpu = {k: round(process_cpu(pid) - before[k], 2) for k, pid in others.items()}
                run.update(
                    commit=commit,
                    pair=index // max(1, len(modes)),
                    load_average_1m_before=round(load, 2),
                    load_average_1m_after=round(os.getloadavg()[0], 2),
                    server_cpu_seconds=cpu["ors_server"],
                    standin_cpu_seconds=cpu["standin"],
                    when=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                )
                runs.append(run)
                with runs_file.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(run) + "\n")
                print(json.dumps(run), flush=True)
                shutil.rmtree(target, ignore_errors=True)
    finally:
        standin.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return runs


def _samples(paths: list[Path]) -> list[dict[str, Any]]:
    found = []
    for path in paths:
        lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        if lines:
            found.append({"samples_file": path.name, "samples": lines})
    return found


def report(
    runs: list[dict[str, Any]],
    partial: list[Path],
    out_dir: Path,
    rss: list[Path] = [],  # noqa: B006
) -> dict[str, Any]:
    """``eval_scale.json`` and ``eval_scale.md`` in ``out_dir`` from finished ``runs``, the
    RSS samples of runs stopped before the end (``partial``) and of finished runs whose
    memory over time is shown (``rss``)."""
    stopped, traces = _samples(partial), _samples(rss)
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1m_at_report": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commits": sorted({r["commit"] for r in runs if "commit" in r}),
        "setup": {
            "environment": "bench/lottery_env.py",
            "endpoint": "tests/openai_standin.py (answers at once)",
            "messages_per_rollout": 2 + 2 * CALLS,
            "message_bytes": SIZE,
            "samples_per_task": SAMPLES,
            "concurrency": sorted({r.get("concurrency", 4) for r in runs}) or [4],
        },
        "runs": runs,
        "stopped_runs": stopped,
        "rss_over_time": traces,
        "verdicts": _verdicts(runs, stopped, traces),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "eval_scale.json").write_text(json.dumps(result, indent=2) + "\n")
    (out_dir / "eval_scale.md").write_text(_markdown(result))
    return result


def _markdown(report: dict[str, Any]) -> str:
    m, s = report["machine"], report["setup"]
    lines = [
        "# orsgen eval at scale (bench/eval_scale.py)",
        "",
        f"Report written {report['when']}; measured on commit(s) "
        f"{', '.join(report['commits']) or 'unknown'}. {m['cpus']} CPUs shared with other "
        f"work (see each run's load average), Python {m['python']}. "
        f"{s['messages_per_rollout']} messages of {s['message_bytes']} bytes per rollout, "
        f"{s['samples_per_task']} samples per task, concurrency "
        f"{', '.join(str(c) for c in s['concurrency'])}; {s['environment']} on a local ORS "
        f"server, {s['endpoint']}. Each run is its own process; CPU is that process's user + "
        "system seconds over the whole `evaluate` call.",
        "",
        "| rollouts | writes | pair | rollouts/s | CPU ms/rollout | server CPU s | stand-in "
        "CPU s | peak RSS MB | results.jsonl MB | load 1m before/after |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in report["runs"]:
        lines.append(
            f"| {r['rollouts']} | {'yes' if r['writes'] else 'no'} | {r.get('pair', '')} | "
            f"{r['rollouts_per_second']} | {r.get('cpu_ms_per_rollout', '')} | "
            f"{r.get('server_cpu_seconds', '')} | {r.get('standin_cpu_seconds', '')} | "
            f"{r['peak_rss_mb']} | {r['results_mb']} | "
            f"{r.get('load_average_1m_before', '')}/{r.get('load_average_1m_after', '')} |"
        )
    for stop in report["stopped_runs"]:
        last = stop["samples"][-1]
        lines += [
            "",
            f"Stopped before the end ({stop['samples_file']}): {last['done']} rollouts done "
            f"after {last['seconds']} s, RSS {last['rss_mb']} MB, peak {last['peak_rss_mb']} MB.",
        ]
    for trace in report.get("rss_over_time", []):
        points = trace["samples"]
        shown = [points[round(i * (len(points) - 1) / 5)] for i in range(6)]
        lines += [
            "",
            f"RSS during a run ({trace['samples_file']}, sampled every few thousand "
            "rollouts): "
            + ", ".join(f"{p['rss_mb']} MB after {p['done']}" for p in shown)
            + f"; peak {points[-1]['peak_rss_mb']} MB.",
        ]
    lines += ["", "## Goals", ""]
    for line in report["verdicts"]:
        lines.append(f"- {line}")
    return "\n".join(lines) + "\n"


def _spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f}, range {min(values):.2f} to {max(values):.2f}"


def _verdicts(
    runs: list[dict[str, Any]], stopped: list[dict[str, Any]], rss: list[dict[str, Any]]
) -> list[str]:
    """The goals, from the medians of each (size, writes) and the peak RSS of each size."""

    def of(rollouts: int, writes: bool, key: str) -> list[float]:
        return [r[key] for r in runs if r["rollouts"] == rollouts and r["writes"] == writes]

    out: list[str] = []
    sizes = sorted({r["rollouts"] for r in runs})
    for rollouts in sizes:
        quiet = of(rollouts, False, "rollouts_per_second")
        writing = of(rollouts, True, "rollouts_per_second")
        if not (quiet and writing):
            continue
        ratio = statistics.median(writing) / statistics.median(quiet)
        pairs: dict[int, dict[bool, float]] = {}
        for r in runs:
            if r["rollouts"] == rollouts and "pair" in r:
                pairs.setdefault(r["pair"], {})[r["writes"]] = r["rollouts_per_second"]
        per_pair = [p[True] / p[False] for p in pairs.values() if len(p) == 2]
        met = "met" if ratio >= 0.90 else "NOT met"
        line = (
            f"throughput at {rollouts} rollouts: writing runs at {ratio:.2f} of the speed of "
            f"writing nothing (ratio of medians of {len(writing)} and {len(quiet)} runs; "
            f"rollouts/s writing {_spread(writing)}, not writing {_spread(quiet)}"
        )
        if per_pair:
            line += f"; per-pair ratios {', '.join(f'{x:.2f}' for x in per_pair)}"
        cpu_w = (
            of(rollouts, True, "cpu_ms_per_rollout")
            if all("cpu_ms_per_rollout" in r for r in runs)
            else []
        )
        cpu_q = of(rollouts, False, "cpu_ms_per_rollout") if cpu_w else []
        if cpu_w and cpu_q:
            cpu_ratio = statistics.median(cpu_w) / statistics.median(cpu_q)
            line += (
                f"; eval-process CPU ms per rollout writing {_spread(cpu_w)}, not writing "
                f"{_spread(cpu_q)}: writing uses {cpu_ratio:.2f} times the CPU per rollout"
            )
        out.append(f"{line}). Goal (within 10%, at least 0.90): {met}.")
    written = sorted({r["rollouts"] for r in runs if r["writes"]})
    peaks = {n: max(of(n, True, "peak_rss_mb")) for n in written}
    for stop in stopped:
        last = stop["samples"][-1]
        peaks.setdefault(last["done"], last["peak_rss_mb"])
    during = {}  # the peak before evaluate returned (the last sample is taken after it)
    for trace in [*rss, *stopped]:
        points = trace["samples"]
        inside = points[:-1] if trace in rss and len(points) > 1 else points
        during[inside[-1]["done"]] = inside[-1]["peak_rss_mb"]
    if len(during) > 1:
        out.append(
            "peak RSS writing during the rollouts (RSS samples, before the report is "
            "written): " + ", ".join(f"{during[n]} MB at {n}" for n in sorted(during))
        )
    if len(peaks) > 1:
        low, high = min(peaks), max(peaks)
        growth = peaks[high] / peaks[low] - 1
        met = "met" if growth <= 0.10 else "NOT met"
        out.append(
            "peak RSS writing: "
            + ", ".join(f"{peaks[n]} MB at {n} rollouts" for n in sorted(peaks))
            + f" ({growth:+.1%} from {low} to {high}). Goal (about the same, taken as within "
            f"10%): {met}."
        )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rollouts", default="1000,10000", help="sizes, comma-separated")
    p.add_argument("--repeats", type=int, default=1, help="runs of each mode per size")
    p.add_argument(
        "--modes",
        choices=("both", "write", "none"),
        default="both",
        help="both: alternate writing nothing and writing; write / none: one mode only",
    )
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--sample-every", type=int, default=1000, help="rollouts per RSS sample")
    p.add_argument(
        "--runs",
        type=Path,
        help="append each finished run here as a JSON line (default: a new temporary file); "
        "its RSS samples go beside it",
    )
    p.add_argument(
        "--report",
        nargs="+",
        type=Path,
        metavar="RUNS",
        help="write the results from these runs files (and the *.rss.jsonl of runs that "
        "did not finish, given after --partial) instead of measuring",
    )
    p.add_argument(
        "--partial",
        nargs="*",
        type=Path,
        default=[],
        help="RSS samples of stopped runs",
    )
    p.add_argument(
        "--rss",
        nargs="*",
        type=Path,
        default=[],
        help="RSS samples of runs to show over time",
    )
    p.add_argument("--profile-to", type=Path, help="run under cProfile, stats to this file")
    p.add_argument("--out", type=Path, default=BENCH / "results")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--package", help=argparse.SUPPRESS)
    p.add_argument("--endpoint", help=argparse.SUPPRESS)
    p.add_argument("--base-url", help=argparse.SUPPRESS)
    p.add_argument("--write", help=argparse.SUPPRESS)
    p.add_argument("--samples", help=argparse.SUPPRESS)
    p.add_argument("--profile", help=argparse.SUPPRESS)
    opts = p.parse_args()
    if opts.child:
        opts.rollouts = int(opts.rollouts)
        child(opts)
        return
    if opts.report:
        runs = [
            json.loads(line)
            for path in opts.report
            for line in path.read_text().splitlines()
            if line.strip()
        ]
        report(runs, opts.partial, opts.out, opts.rss)
        return
    modes = {"both": [False, True], "write": [True], "none": [False]}[opts.modes]
    runs_file = opts.runs or Path(tempfile.mkdtemp(prefix="orsgen-eval-scale-")) / "runs.jsonl"
    levels = [int(x) for x in opts.rollouts.split(",")]
    runs = measure(
        levels,
        opts.repeats,
        opts.concurrency,
        modes,
        runs_file,
        opts.sample_every,
        opts.profile_to,
    )
    if opts.runs is None:
        report(runs, [], opts.out)


if __name__ == "__main__":
    main()

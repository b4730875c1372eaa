"""``orsgen eval`` near the endpoint's limit (issue 36): rollouts per second at concurrency
8, 32 and 64 against a stand-in model endpoint that answers each request after a fixed
latency (200 ms), with one endpoint and with two, and inspect-openreward on the same
servers in the same run.

    python bench/throughput.py [--concurrency 8,32,64] [--rollouts-per-worker 20]
        [--latency 0.2] [--repeats 1] [--contenders orsgen,orsgen-2,inspect] [--out DIR]
        [--baseline DIR] [--profile DIR [--profile-rate HZ]]

The environment is bench/lottery_env.py on a local ORS server (tests/serve_env.py, the
project's environment), one ``draw`` call that scores, the episode left open; the endpoint
is tests/openai_standin.py with ``--delay``: each rollout is a tool call, then a final
answer, 2 turns. The limit is ``concurrency / (turns x latency)`` rollouts per second.
Each run is its own process, evaluating ``concurrency x rollouts-per-worker`` tasks once:

- ``orsgen``: ``orsgen.evaluate`` as a user calls it (results written to a run directory,
  progress bar on), one endpoint; ``orsgen-2``: the same with two stand-in endpoints;
- ``inspect``: inspect-openreward's quickstart (bench/throughput_inspect.py) in its own
  environment, ``bench/.venv-inspect`` (made here on first use: ``pip install
  inspect-openreward==0.3.0``; never the project's environment);
- ``baseline`` (with ``--baseline DIR``, another checkout of orsgen, such as a ``git
  worktree`` of an earlier commit): ``orsgen`` with that checkout's orsgen imported, taking
  turns with ``orsgen`` on the same servers, for a before/after on a shared machine.

Per run: rollouts per second (over the rollouts alone, from the first start to the last
end), its fraction of the limit, the same over the endpoint's own window (the stand-ins'
first request to their last answer; orsgen only), the CPU seconds per rollout of the eval process, of the
ORS server and of the stand-ins, and where each rollout's time goes. The figures are an
exact split of each rollout's slot, ``concurrency x seconds / rollouts``: the model's own
latency (turns x latency), the rest of the endpoint round trips (client, network, queueing
for the CPU), the session open (``reset``), the tool calls, the harness's own time inside
the rollout, and the time between rollouts (row writing, taking the next task, the start
and the end of the run). Writes ``DIR/throughput.json`` and ``DIR/throughput.md`` (default
bench/results).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
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
from measure import commit, cpu_seconds, process_cpu  # noqa: E402  (bench/measure.py)

INSPECT_VENV = BENCH / ".venv-inspect"
INSPECT_PIN = "inspect-openreward==0.3.0"
CONTENDERS = ("orsgen", "orsgen-2", "inspect", "baseline")
TURNS = 2  # one tool call, then the final answer
for _k, _v in {
    "OPENREWARD_DISABLE_UPDATE_CHECK": "1",
    "OPENREWARD_LOG_LEVEL": "ERROR",
    "LOTTERY_CALLS": "1",
    "LOTTERY_OPEN": "1",  # the draw scores; the model's final answer ends the episode
}.items():
    os.environ[_k] = _v


def child(opts: argparse.Namespace) -> None:
    """One orsgen run, in this process: print its figures as one JSON line."""
    if opts.orsgen:  # the baseline's orsgen, before anything imports one
        sys.path.insert(0, opts.orsgen)
    from conftest import import_generated

    from orsgen import EvalConfig, evaluate

    pkg = import_generated(Path(opts.package))
    resets: list[float] = []  # seconds of each reset (list.append is atomic)

    class Timed(pkg.LotteryEnv):  # type: ignore[misc, name-defined]
        """The bench's adapter: times each reset (the session open)."""

        def reset(self, *args: Any, **kwargs: Any) -> Any:
            began = time.monotonic()
            try:
                return super().reset(*args, **kwargs)
            finally:
                resets.append(time.monotonic() - began)

    endpoints = opts.endpoint.split(",")
    try:
        config = EvalConfig(
            model="standin",
            endpoint=endpoints[0] if len(endpoints) == 1 else endpoints,
            split="test",
            num_tasks=opts.rollouts,
        )
    except (TypeError, ValueError) as exc:
        print(json.dumps({"unsupported": f"{type(exc).__name__}: {exc}"}), flush=True)
        return
    # A one-rollout run first: the imports and one-time costs (the first session's tool
    # listing) are paid there, so the run measured is a steady one.
    warm = dataclasses.replace(config, num_tasks=1)
    adapter = {"base_url": opts.base_url}
    evaluate(Timed, warm, adapter=adapter, out=Path(opts.write) / "warm-up")
    resets.clear()
    began = time.time()  # the stand-ins' window starts at the first request after this
    cpu0 = cpu_seconds()
    result = evaluate(Timed, config, adapter=adapter, concurrency=opts.concurrency, out=opts.write)
    cpu = cpu_seconds() - cpu0
    rows = list(result.transcripts())
    figures = {
        "seconds": result.seconds,
        "began": began,
        "cpu_seconds": round(cpu, 3),
        "scored": sum(r["verdict"] == "scored" for r in rows),
        "turns": [r["turns"] for r in rows],
        "rollout_seconds": [r["seconds"] for r in rows],
        "endpoint_seconds": [r["endpoint_seconds"] for r in rows],
        "environment_seconds": [r["environment_seconds"] for r in rows],  # the reset's too
        "reset_seconds": [round(x, 4) for x in resets],
    }
    print(json.dumps(figures), flush=True)


def _split(out: dict[str, Any], concurrency: int, latency: float) -> dict[str, Any]:
    """A run's rate and the split of each rollout's slot (ms per rollout, means) from a
    child's figures. A rollout's own time is its session open (orsgen's ``reset``, timed
    apart as ``reset_seconds``) and its conversation; a session opened while the worker's
    previous rollout ran is off the critical path, so the slot's last part is what lies
    outside the conversations: the session opens not hidden, writing the row, taking the
    next task, the start and the end of the run. inspect-openreward's session open is not
    timed apart (no ``reset_seconds``): it stays in its harness's time."""
    n = len(out["rollout_seconds"])
    mean = lambda values: 1000 * sum(values) / max(1, n)  # noqa: E731
    model = mean([t * latency for t in out["turns"]])
    opened = mean(out.get("reset_seconds", []))
    conversation = mean(out["rollout_seconds"]) - opened
    endpoint = mean(out["endpoint_seconds"])
    tools = mean(out["environment_seconds"]) - opened
    slot = concurrency * out["seconds"] / max(1, n) * 1000
    figures = {
        "rollouts": n,
        "scored": out["scored"],
        "seconds": round(out["seconds"], 3),
        "cpu_seconds": out["cpu_seconds"],
        "turns_per_rollout": round(sum(out["turns"]) / max(1, n), 3),
        "rollouts_per_second": round(n / out["seconds"], 2),
        "slot_ms": round(slot, 1),
        "split_ms": {
            "model latency": round(model, 1),
            "rest of endpoint round trips": round(endpoint - model, 1),
            "tool calls": round(tools, 1),
            "harness inside the conversation": round(conversation - endpoint - tools, 1),
            "outside the conversation": round(slot - conversation, 1),
        },
        "session_open_ms": round(opened, 1) if out.get("reset_seconds") else None,
    }
    if out.get("error"):
        figures["error"] = out["error"]
    return figures


def inspect_python() -> Path:
    """bench/.venv-inspect's Python, the environment made first if it is missing."""
    python = INSPECT_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(INSPECT_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", INSPECT_PIN], check=True)
    return python


def _inspect_versions(python: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json; print(json.dumps({d: m.version(d) for d in "
        "('inspect-ai', 'inspect-openreward', 'openreward', 'openai')}))"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    return dict(json.loads(done.stdout)) if done.returncode == 0 else {"error": done.stderr}


def one_run(
    contender: str,
    concurrency: int,
    opts: argparse.Namespace,
    server: Any,
    servers: dict[str, Any],
    work: Path,
) -> dict[str, Any]:
    """One run of ``contender`` in a process of its own, with the CPU every process spent."""
    rollouts = concurrency * opts.rollouts_per_worker
    target = work / f"run-{contender}-{concurrency}"
    shutil.rmtree(target, ignore_errors=True)
    endpoints = servers["endpoints"][: 2 if contender == "orsgen-2" else 1]
    if opts.baseline is None and contender == "baseline":
        raise ValueError("the baseline contender needs --baseline DIR")
    if contender == "inspect":
        args = [
            str(inspect_python()),
            str(BENCH / "throughput_inspect.py"),
            "--ors",
            servers["ors"],
            "--endpoint",
            endpoints[0],
            "--log-dir",
            str(target),
        ]
    else:
        args = [
            sys.executable,
            __file__,
            "--child",
            "--package",
            servers["package"],
            "--base-url",
            servers["ors"],
            "--endpoint",
            ",".join(endpoints),
            "--write",
            str(target),
        ]
        if contender == "baseline":
            args += ["--orsgen", str(opts.baseline)]
    args += ["--rollouts", str(rollouts), "--concurrency", str(concurrency)]
    if opts.profile is not None:  # py-spy (bench/.venv-inspect) samples the run's stacks
        spy = Path(sys.executable).parent / "py-spy"  # this environment's, else the bench's
        if not spy.exists():
            spy = INSPECT_VENV / "bin" / "py-spy"
        if not spy.exists():
            subprocess.run([str(inspect_python()), "-m", "pip", "install", "-q", "py-spy"])
        opts.profile.mkdir(parents=True, exist_ok=True)
        stacks = opts.profile / f"{contender}-{concurrency}.txt"
        spied = [str(spy), "record", "--nonblocking", "--format", "raw", "-o", str(stacks)]
        spied += ["--rate", str(opts.profile_rate)]
        spied += ["--idle", "--threads"] if opts.profile_idle else ["--gil"]
        args = [*spied, "--", *args]
    pids = servers["pids"]
    server.reset_counts()
    before = {name: process_cpu(pid) for name, pid in pids.items()}
    asked = [standin.chat_requests() for standin in servers["standins"]]
    load = os.getloadavg()[0]
    with (work / f"{contender}-{concurrency}.stderr").open("w") as err:
        done = subprocess.run(args, stdout=subprocess.PIPE, stderr=err, text=True)
    if done.returncode != 0:
        tail = (work / f"{contender}-{concurrency}.stderr").read_text()[-3000:]
        raise RuntimeError(f"{contender} at concurrency {concurrency} failed:\n{tail}")
    out = json.loads([x for x in done.stdout.splitlines() if x.startswith("{")][-1])
    cpu = {name: process_cpu(pid) - before[name] for name, pid in pids.items()}
    requests, connections = server.requests(), server.connections()
    asked = [s.chat_requests() - n for s, n in zip(servers["standins"], asked, strict=True)]
    run: dict[str, Any] = {"contender": contender, "endpoints": len(endpoints)}
    run["concurrency"] = concurrency
    if "unsupported" in out:
        run["unsupported"] = out["unsupported"]
        return run
    windows = [s.window(out["began"]) for s in servers["standins"]] if "began" in out else []
    windows = [w for w in windows if w is not None]
    out = _split(out, concurrency, opts.latency)
    limit = concurrency / (TURNS * opts.latency)
    if windows:  # the endpoint's own window: its first request to its last answer
        window = max(w[1] for w in windows) - min(w[0] for w in windows)
        rate = out["rollouts"] / window
        run.update(
            endpoint_window_seconds=round(window, 3),
            endpoint_window_rollouts_per_second=round(rate, 2),
            endpoint_window_fraction_of_limit=round(rate / limit, 3),
        )
    per = 1000 / max(1, out["rollouts"])
    run.update(out)
    run.update(
        limit_rollouts_per_second=round(limit, 2),
        fraction_of_limit=round(out["rollouts_per_second"] / limit, 3),
        eval_cpu_ms_per_rollout=round(out["cpu_seconds"] * per, 2),
        server_cpu_ms_per_rollout=round(cpu["ors_server"] * per, 2),
        standin_cpu_ms_per_rollout=round(
            sum(v for k, v in cpu.items() if k.startswith("standin")) * per, 2
        ),
        endpoint_requests=asked,  # each stand-in's, the warm-up's included
        ors_requests_per_rollout=round(sum(requests.values()) * per / 1000, 2),
        ors_new_connections_per_rollout=round(sum(connections.values()) * per / 1000, 3),
        load_average_1m_before=round(load, 2),
        load_average_1m_after=round(os.getloadavg()[0], 2),
        when=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    )
    shutil.rmtree(target, ignore_errors=True)
    return run


def measure(opts: argparse.Namespace) -> dict[str, Any]:
    """Every (concurrency, contender) run, ``--repeats`` times, contenders taking turns."""
    import openai_standin
    import ors_server
    from conftest import generate_and_import

    levels = [int(x) for x in opts.concurrency.split(",")]
    contenders = opts.contenders.split(",")
    work = Path(tempfile.mkdtemp(prefix="orsgen-bench-throughput-"))
    os.environ["LOTTERY_TASKS"] = str(max(levels) * opts.rollouts_per_worker)
    server = ors_server.start(BENCH / "lottery_env.py", log_dir=work)
    standins = [
        openai_standin.start(work, tool="draw", calls=1, delay=opts.latency) for _ in range(2)
    ]
    uptime = [_uptime()]
    runs: list[dict[str, Any]] = []
    unsupported: set[str] = set()
    try:
        package = work / "lottery_throughput"
        generate_and_import(server.url, package, class_name="LotteryEnv")
        servers = {
            "ors": server.url,
            "endpoints": [s.endpoint for s in standins],
            "package": str(package),
            "standins": standins,
            "pids": {"ors_server": server.process.pid}
            | {f"standin{i}": s.process.pid for i, s in enumerate(standins)},
        }
        for _ in range(opts.repeats):
            for level in levels:
                for contender in contenders:
                    if contender in unsupported:
                        continue
                    run = one_run(contender, level, opts, server, servers, work)
                    if "unsupported" in run:
                        unsupported.add(contender)
                    runs.append(run)
                    print(json.dumps(run), flush=True)
    finally:
        for standin in standins:
            standin.stop()
        server.stop()
        uptime.append(_uptime())
        shutil.rmtree(work, ignore_errors=True)
    versions = _inspect_versions(INSPECT_VENV / "bin" / "python") if "inspect" in contenders else {}
    return {
        "commit": commit(),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "uptime_before": uptime[0],
            "uptime_after": uptime[-1],
        },
        "setup": {
            "environment": "bench/lottery_env.py (LOTTERY_CALLS=1, LOTTERY_OPEN=1)",
            "endpoint": f"tests/openai_standin.py --delay {opts.latency} (aiohttp)",
            "turns_per_rollout": TURNS,
            "latency_seconds": opts.latency,
            "rollouts_per_worker": opts.rollouts_per_worker,
            "repeats": opts.repeats,
            "inspect": versions,
        },
        "runs": runs,
    }


def _uptime() -> str:
    done = subprocess.run(["uptime"], capture_output=True, text=True)
    return done.stdout.strip()


def _median_runs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each (contender, concurrency) the run of median rate (with several repeats)."""
    keyed: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for run in runs:
        if "unsupported" not in run:
            keyed.setdefault((run["contender"], run["concurrency"]), []).append(run)
    chosen = []
    for key in sorted(keyed, key=lambda k: (k[1], CONTENDERS.index(k[0]))):
        group = sorted(keyed[key], key=lambda r: r["rollouts_per_second"])
        chosen.append(group[(len(group) - 1) // 2])
    return chosen


def verdicts(runs: list[dict[str, Any]]) -> list[str]:
    """The goals: 0.9 of the limit at concurrency 32 with one endpoint, and at least
    inspect-openreward's rate at every concurrency (medians of the repeats)."""
    best = {(r["contender"], r["concurrency"]): r for r in _median_runs(runs)}
    out = []
    ours = best.get(("orsgen", 32))
    if ours is not None:
        met = "met" if ours["fraction_of_limit"] >= 0.9 else "NOT met"
        out.append(
            f"orsgen at concurrency 32, one endpoint: {ours['fraction_of_limit']} of the limit "
            f"(goal at least 0.9): {met}."
        )
    for contender in ("orsgen", "baseline"):  # issue 40's goal, best of the repeats
        runs32 = [r for r in runs if r["contender"] == contender and r["concurrency"] == 32]
        if runs32 and "eval_cpu_ms_per_rollout" in runs32[0]:
            cpu = min(r["eval_cpu_ms_per_rollout"] for r in runs32)
            window = max(r.get("endpoint_window_fraction_of_limit", 0.0) for r in runs32)
            met = "met" if cpu <= 5 and window >= 0.9 else "NOT met"
            out.append(
                f"{contender} at concurrency 32, best of {len(runs32)}: {cpu} ms of eval CPU "
                f"per rollout (goal at most 5), {window} of the limit over the endpoint's "
                f"window (goal at least 0.9): {met}."
            )
    for (contender, level), run in sorted(best.items(), key=lambda kv: kv[0][1]):
        theirs = best.get(("inspect", level))
        if contender == "orsgen" and theirs is not None:
            ratio = run["rollouts_per_second"] / theirs["rollouts_per_second"]
            met = "met" if ratio >= 1 else "NOT met"
            out.append(
                f"concurrency {level}: orsgen {run['rollouts_per_second']} rollouts/s, "
                f"inspect-openreward {theirs['rollouts_per_second']} ({ratio:.2f}x; goal at "
                f"least 1x): {met}."
            )
    for run in runs:
        if "unsupported" in run:
            out.append(f"{run['contender']} not run: {run['unsupported']}")
    return out


def markdown(report: dict[str, Any]) -> str:
    m, s = report["machine"], report["setup"]
    chosen = _median_runs(report["runs"])
    lines = [
        "# orsgen eval near the endpoint's limit (bench/throughput.py)",
        "",
        f"Measured {report['when']} on commit {report['commit']}; {m['cpus']} CPUs shared "
        f"with other work, Python {m['python']}. `uptime` before: `{m['uptime_before']}`; "
        f"after: `{m['uptime_after']}`. {s['environment']} on a local ORS server; "
        f"{s['endpoint']}; {s['turns_per_rollout']} turns per rollout (a tool call, then the "
        f"answer); concurrency x {s['rollouts_per_worker']} rollouts per run. The limit is "
        f"concurrency / ({s['turns_per_rollout']} x {s['latency_seconds']} s). Each row is "
        f"the run of median rate of {s.get('repeats', 1)} (the contenders taking turns; every "
        "run is in throughput.json).",
        "",
    ]
    if s.get("inspect"):
        lines += [
            "inspect-openreward: "
            + ", ".join(f"{k} {v}" for k, v in s["inspect"].items())
            + " (bench/.venv-inspect), model `openai-api/standin/standin`, max_samples and "
            "max_connections = concurrency.",
            "",
        ]
    lines += [
        "| contender | endpoints | concurrency | rollouts | scored | rollouts/s | limit | "
        "fraction | fraction, endpoint window | eval CPU ms/rollout | ORS server CPU ms/rollout | stand-in CPU ms/rollout "
        "| ORS requests/rollout | new ORS connections/rollout | requests to each endpoint "
        "| load 1m before/after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in chosen:
        lines.append(
            f"| {r['contender']} | {r['endpoints']} | {r['concurrency']} | {r['rollouts']} | "
            f"{r['scored']} | {r['rollouts_per_second']} | {r['limit_rollouts_per_second']} | "
            f"{r['fraction_of_limit']} | {r.get('endpoint_window_fraction_of_limit', '-')} | "
            f"{r['eval_cpu_ms_per_rollout']} | "
            f"{r['server_cpu_ms_per_rollout']} | {r['standin_cpu_ms_per_rollout']} | "
            f"{r['ors_requests_per_rollout']} | {r['ors_new_connections_per_rollout']} | "
            f"{', '.join(str(n) for n in r['endpoint_requests'])} | "
            f"{r['load_average_1m_before']}/{r['load_average_1m_after']} |"
        )
    parts = list(chosen[0]["split_ms"]) if chosen else []
    lines += [
        "",
        "Where each rollout's slot goes (ms per rollout, means; the slot is concurrency x "
        "seconds / rollouts, and the parts add up to it; the session open is outside the "
        "conversation, on the critical path unless opened while the previous rollout ran; "
        "inspect-openreward's is inside its harness's time):",
        "",
        "| contender | concurrency | slot | " + " | ".join(parts) + " | session open |",
        "|---|---:|---:|" + "---:|" * (len(parts) + 1),
    ]
    for r in chosen:
        opened = r.get("session_open_ms")
        lines.append(
            f"| {r['contender']} | {r['concurrency']} | {r['slot_ms']} | "
            + " | ".join(str(r["split_ms"][p]) for p in parts)
            + f" | {'-' if opened is None else opened} |"
        )
    lines += ["", "## Goals", ""] + [f"- {v}" for v in verdicts(report["runs"])]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--concurrency", default="8,32,64")
    p.add_argument("--rollouts-per-worker", type=int, default=20)
    p.add_argument("--latency", type=float, default=0.2, help="the endpoint's seconds a turn")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--contenders", default=",".join(CONTENDERS))
    p.add_argument("--out", type=Path, default=BENCH / "results")
    p.add_argument("--baseline", type=Path, help="another orsgen checkout: the baseline contender")
    p.add_argument("--profile", type=Path, help="sample each run with py-spy into this folder")
    p.add_argument("--profile-rate", type=int, default=100, help="py-spy's samples a second")
    p.add_argument(
        "--profile-idle", action="store_true", help="sample waiting threads too, not only the GIL"
    )
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--package", help=argparse.SUPPRESS)
    p.add_argument("--base-url", help=argparse.SUPPRESS)
    p.add_argument("--endpoint", help=argparse.SUPPRESS)
    p.add_argument("--write", help=argparse.SUPPRESS)
    p.add_argument("--rollouts", type=int, help=argparse.SUPPRESS)
    p.add_argument("--orsgen", help=argparse.SUPPRESS)
    opts = p.parse_args()
    if opts.child:
        opts.concurrency = int(opts.concurrency)
        child(opts)
        return
    unknown = set(opts.contenders.split(",")) - set(CONTENDERS)
    if unknown:
        p.error(f"unknown contender(s) {', '.join(sorted(unknown))}; choose from {CONTENDERS}")
    report = measure(opts)
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "throughput.json").write_text(json.dumps(report, indent=2) + "\n")
    (opts.out / "throughput.md").write_text(markdown(report))


if __name__ == "__main__":
    main()

"""``orsgen validate`` speed (issue 46): a 20-task environment behind 50 ms of latency per
request, validated at the default concurrency (required: at most 60 s).

    python bench/validate.py [--tasks 20] [--latency 0.05] [--rounds 3] [--out DIR]

It serves bench/bench_env.py (``benchenv``, no setup delay, no tool latency) with
tests/serve_env.py on 127.0.0.1, puts a proxy in front that waits ``--latency`` seconds before
forwarding each request (SSE streams chunk by chunk), and runs ``python -m orsgen validate
PROXY --num-tasks all`` as a user runs it, ``--rounds`` times (the machine is shared: the
median and the range). The figures: the process's wall time, and the probe's own (its
``probed N tasks in S s`` line), with its sessions and calls. Writes ``DIR/validate.json`` and
``DIR/validate.md`` (default bench/results).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "examples")]
os.environ.setdefault("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
os.environ.setdefault("OPENREWARD_LOG_LEVEL", "ERROR")

import ors_server  # noqa: E402  (tests/ors_server.py)

BENCH_ENV = BENCH / "bench_env.py"
PROBED = re.compile(r"probed (\d+) tasks in ([\d.]+) s \((\d+) sessions, (\d+) calls\)")


def serve_delayed(upstream: str, port: int, latency: float) -> None:
    """The delay proxy (run as ``--proxy UPSTREAM PORT LATENCY``, its own process)."""
    from aiohttp import ClientSession, web

    async def handle(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(latency)
        body = await request.read()
        skip = {"host", "content-length"}
        headers = {k: v for k, v in request.headers.items() if k.lower() not in skip}
        client: ClientSession = request.app["client"]
        url = upstream + request.path_qs
        async with client.request(request.method, url, data=body, headers=headers) as up:
            keep = {"content-type", "cache-control", "retry-after"}
            response = web.StreamResponse(
                status=up.status, headers={k: v for k, v in up.headers.items() if k.lower() in keep}
            )
            await response.prepare(request)
            async for chunk in up.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    async def start(app: web.Application) -> None:
        app["client"] = ClientSession()

    async def stop(app: web.Application) -> None:
        await app["client"].close()

    app = web.Application()
    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    app.router.add_route("*", "/{tail:.*}", handle)
    web.run_app(app, host="127.0.0.1", port=port, print=None)


def start_proxy(upstream: str, latency: float) -> tuple[subprocess.Popen[bytes], str]:
    port = ors_server.free_port()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--proxy", upstream, str(port), str(latency)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            import urllib.request

            urllib.request.urlopen(f"{url}/list_environments", timeout=5).read()
            return proc, url
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("the delay proxy did not start") from None
            time.sleep(0.1)


def one_round(url: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "orsgen", "validate", url, "--num-tasks", "all"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - started
    found = PROBED.search(run.stderr)
    if run.returncode not in (0, 1) or not found:
        raise RuntimeError(f"orsgen validate failed ({run.returncode}):\n{run.stderr}")
    return {
        "exit_code": run.returncode,
        "tasks": int(found[1]),
        "probe_seconds": float(found[2]),
        "sessions": int(found[3]),
        "calls": int(found[4]),
        "wall_seconds": round(wall, 2),
    }


def main() -> None:
    if sys.argv[1:2] == ["--proxy"]:
        serve_delayed(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=BENCH / "results")
    opts = parser.parse_args()
    os.environ.update(
        {"BENCH_TASKS": str(opts.tasks), "BENCH_SETUP_DELAY": "0", "BENCH_TOOL_LATENCY": "0"}
    )
    server = ors_server.start(BENCH_ENV)
    proxy, url = start_proxy(server.url, opts.latency)
    try:
        rounds = [one_round(url) for _ in range(opts.rounds)]
    finally:
        ors_server.stop_process(proxy)
        server.stop()
    result: dict[str, Any] = {
        "tasks": opts.tasks,
        "latency_seconds": opts.latency,
        "concurrency": "default (4)",
        "machine": f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}",
        "python": platform.python_version(),
        "rounds": rounds,
    }
    for key in ("wall_seconds", "probe_seconds"):
        values = [r[key] for r in rounds]
        result[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "validate.json").write_text(json.dumps(result, indent=2) + "\n")
    first = rounds[0]
    wall, probe = result["wall_seconds"], result["probe_seconds"]
    (opts.out / "validate.md").write_text(
        "# orsgen validate speed (bench/validate.py)\n\n"
        f"{result['machine']} (a shared machine); bench/bench_env.py with {opts.tasks} tasks, "
        f"{opts.latency * 1000:.0f} ms of latency per request (a proxy), the default "
        f"concurrency; medians of {opts.rounds} rounds (ranges in validate.json).\n\n"
        "| tasks | sessions | calls | probe s | wall s (process) |\n|---|---|---|---|---|\n"
        f"| {first['tasks']} | {first['sessions']} | {first['calls']} | {probe['median']} "
        f"({probe['min']}-{probe['max']}) | {wall['median']} ({wall['min']}-{wall['max']}) |\n"
    )
    print(json.dumps({"wall_seconds": wall, "probe_seconds": probe}))


if __name__ == "__main__":
    main()

"""Training at platform scale (issue 18): orsgen's generated adapter and TRL's bridge against a
server that limits how many sessions are open, measured the same way in one run.

    python bench/capacity.py [--rollouts 128] [--limit 32] [--refuse 0.1]
                             [--setup-delay 0.5] [--tool-latency 0.5] [--seed 18] [--out DIR]

It serves bench/bench_env.py (tests/serve_env.py, on 127.0.0.1) behind the capacity-limiting
proxy of the tests (tests/capacity_proxy.py, its own process), which answers a session creation
with HTTP 429 and ``Retry-After: 1`` while ``--limit`` sessions are open, and refuses
``--refuse`` of all creations at random (seeded). Each contender gets a fresh proxy and runs in
its own process: ``--rollouts`` threads at once, as AsyncGRPOTrainer's worker drives its
environments (one instance per rollout, ``reset`` and the tool from a thread pool), each a
``reset`` plus one scoring call. orsgen runs with ``max_sessions=--limit``. One episode takes
``--setup-delay`` (the environment's ``setup()``) plus ``--tool-latency`` (the call), so the
ideal wall time is ``ceil(rollouts / limit)`` episodes.

Reported per contender: rollouts scored, exceptions that reached the caller, the most sessions
the proxy saw open, sessions left open once every rollout returned (the instances still alive,
as in a trainer's pool, no close call) and after the process exited, wall time against the
ideal, the client process's peak memory per open session, and the runtime's log lines.
Writes ``DIR/capacity.json`` and ``DIR/capacity.md`` (default bench/results).
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import logging
import math
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "examples"), str(BENCH)]

for _k, _v in {
    "OPENREWARD_DISABLE_UPDATE_CHECK": "1",
    "OPENREWARD_LOG_LEVEL": "ERROR",
    "TRL_EXPERIMENTAL_SILENCE": "1",
    "OPENREWARD_API_KEY": "bench",
}.items():
    os.environ.setdefault(_k, _v)

import capacity_proxy  # noqa: E402  (tests/capacity_proxy.py)
import ors_server  # noqa: E402  (tests/ors_server.py)

CONTENDERS = ("orsgen", "trl")
LABELS = {"orsgen": "orsgen adapter", "trl": "TRL bridge"}


# -- one contender, in its own process ----------------------------------------------------


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}")


def _rss() -> int:
    """This process's resident memory in bytes (Linux ``/proc``)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _PeakRSS:
    """Samples the resident memory every 20 ms while the rollouts run."""

    def __init__(self) -> None:
        self.peak = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _rss())

    def __enter__(self) -> _PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())


def _contender(name: str, url: str, limit: int) -> tuple[Any, Any]:
    """The contender's factory and its reward function (``environments=[env]``)."""
    if name == "orsgen":
        from benchenv import BenchEnv, outcome_reward

        return functools.partial(BenchEnv, base_url=url, max_sessions=limit), outcome_reward
    os.environ["OPENREWARD_API_URL"] = os.environ["OPENREWARD_SESSION_URL"] = url
    from trl.experimental.openreward import OpenRewardSpec

    spec = OpenRewardSpec(url, env_name="benchenv")
    return spec.environment_factory, spec.reward_funcs


def child(opts: argparse.Namespace) -> None:
    """Run the rollouts of one contender; print one JSON line of what happened."""
    lines = _Lines()
    logging.getLogger().addHandler(lines)
    factory, reward = _contender(opts.child, opts.url, opts.limit)
    # orsgen imports the SDK at its first reset, the bridge at start-up: import it here for
    # both, so the memory growth below is the rollouts' own.
    import openreward.api.environments.client  # noqa: F401

    capacity_proxy.reset_counts(opts.url)  # the bridge's tool-discovery session is no rollout
    envs: list[Any] = [None] * opts.rollouts
    rewards: list[float | None] = [None] * opts.rollouts
    raised: list[str] = []
    base = _rss()

    def rollout(i: int) -> None:
        try:
            env = envs[i] = factory()
            env.reset(task_index=i)
            env.act(text=f"w{i}")
            rewards[i] = reward(environments=[env])[0]
        except Exception as exc:  # noqa: BLE001 - counted: this is what ends a trainer's run
            raised.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")

    threads = [threading.Thread(target=rollout, args=(i,)) for i in range(opts.rollouts)]
    start = time.perf_counter()
    with _PeakRSS() as mem:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    wall = time.perf_counter() - start
    time.sleep(1.0)  # background closes settle
    stats = capacity_proxy.stats(opts.url)
    print(
        json.dumps(
            {
                "scored": sum(1 for r in rewards if r == 1.0),
                "unscored": sum(1 for r in rewards if r is None),
                "exceptions": len(raised),
                "first_exceptions": sorted(set(raised))[:3],
                "wall_s": round(wall, 2),
                "max_open": stats["max_open"],
                "left_open": stats["open"],
                "refused_limit": stats["refused_limit"],
                "refused_random": stats["refused_random"],
                "created": stats["created"],
                "peak_rss_mb": round(mem.peak / 2**20, 1),
                "rss_growth_mb": round((mem.peak - base) / 2**20, 1),
                "log_lines": lines.lines,
            }
        ),
        flush=True,
    )


# -- the run -----------------------------------------------------------------------------


def _run_contender(
    name: str, server: ors_server.RunningServer, opts: argparse.Namespace, log_dir: Path
) -> dict[str, Any]:
    proxy = capacity_proxy.start(
        server.url, limit=opts.limit, refuse=opts.refuse, seed=opts.seed, log_dir=log_dir
    )
    try:
        args = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            name,
            "--url",
            proxy.url,
            "--rollouts",
            str(opts.rollouts),
            "--limit",
            str(opts.limit),
        ]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(BENCH)])}
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=1800)
        out = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if not out:
            raise RuntimeError(f"{name} run failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
        row: dict[str, Any] = {"impl": LABELS[name], **json.loads(out[-1])}
        row["left_after_exit"] = proxy.wait_open(0, timeout=3.0)
        per = row["rss_growth_mb"] * 1024 / row["max_open"] if row["max_open"] else None
        row["kb_per_open_session"] = None if per is None else round(per)
        return row
    finally:
        proxy.stop()


def _markdown(data: dict[str, Any]) -> str:
    meta, rows = data["meta"], data["rows"]
    head = (
        f"{meta['rollouts']} concurrent rollouts (reset + one scoring call), a server that allows "
        f"{meta['limit']} open sessions and refuses {meta['refuse']:.0%} of creations at random "
        f"(HTTP 429, Retry-After: 1); one episode {meta['episode_s']:g} s, ideal wall time "
        f"{meta['ideal_s']:g} s ({meta['rounds']} rounds). {meta['date']}, {meta['machine']}."
    )
    table = [
        "| | " + " | ".join(r["impl"] for r in rows) + " |",
        "|---|" + "---|" * len(rows),
    ]

    def line(label: str, fmt: Any) -> None:
        table.append(f"| {label} | " + " | ".join(fmt(r) for r in rows) + " |")

    n = meta["rollouts"]
    line("rollouts scored", lambda r: f"{r['scored']}/{n}")
    line("exceptions that reached the caller", lambda r: str(r["exceptions"]))
    line("most sessions open at once", lambda r: f"{r['max_open']} (limit {meta['limit']})")
    line(
        "sessions left open after the rollouts / after exit",
        lambda r: f"{r['left_open']} / {r['left_after_exit']}",
    )
    line(
        "wall time (x ideal)",
        lambda r: f"{r['wall_s']:.1f} s ({r['wall_s'] / meta['ideal_s']:.2f}x)",
    )
    line(
        "client memory per open session",
        lambda r: ("-" if r["kb_per_open_session"] is None else f"{r['kb_per_open_session']} KB"),
    )
    line("refusals (limit / random)", lambda r: f"{r['refused_limit']} / {r['refused_random']}")
    line("log lines", lambda r: str(len(r["log_lines"])))
    out = [head, "", *table, ""]
    for r in rows:
        if r["first_exceptions"]:
            out.append(f"{r['impl']}, first exceptions:")
            out += [f"- `{e}`" for e in r["first_exceptions"]]
        if r["log_lines"]:
            out.append(f"{r['impl']}, log lines (first 6):")
            out += [f"- `{e[:240]}`" for e in r["log_lines"][:6]]
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=128)
    parser.add_argument("--limit", type=int, default=32)
    parser.add_argument("--refuse", type=float, default=0.1)
    parser.add_argument("--setup-delay", type=float, default=0.5)
    parser.add_argument("--tool-latency", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--contenders", default=",".join(CONTENDERS))
    parser.add_argument("--out", type=Path, default=BENCH / "results")
    parser.add_argument("--child", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        child(opts)
        return
    os.environ.update(
        BENCH_TASKS=str(max(opts.rollouts, 1)),
        BENCH_SETUP_DELAY=str(opts.setup_delay),
        BENCH_TOOL_LATENCY=str(opts.tool_latency),
    )
    opts.out.mkdir(parents=True, exist_ok=True)
    log_dir = Path(os.environ.get("TMPDIR", "/tmp"))
    server = ors_server.start(BENCH / "bench_env.py", log_dir=log_dir)
    try:
        rows = [_run_contender(c, server, opts, log_dir) for c in opts.contenders.split(",")]
    finally:
        server.stop()
    episode = opts.setup_delay + opts.tool_latency
    rounds = math.ceil(opts.rollouts / opts.limit)
    data = {
        "meta": {
            "date": dt.date.today().isoformat(),
            "machine": f"{os.cpu_count()} CPUs, Python {platform.python_version()}",
            "rollouts": opts.rollouts,
            "limit": opts.limit,
            "refuse": opts.refuse,
            "seed": opts.seed,
            "episode_s": episode,
            "rounds": rounds,
            "ideal_s": round(rounds * episode, 3),
        },
        "rows": rows,
    }
    (opts.out / "capacity.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    md = _markdown(data)
    (opts.out / "capacity.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()

"""The issue-12 outage run, for orsgen's generated adapter or TRL's bridge, measured the same way.

Four adapters at default settings run a rollout loop (``reset`` plus one ``echo`` call, then the
reward) against a real echo ORS server on loopback. After 8 rollouts the server is stopped for
``--outage`` seconds (30 by default) and restarted on the same port; the loop goes on until 8
rollouts have started after the restart (or 240 s passed). Prints what reached the caller, the
rewards during and after the outage, the time from restart to the first scored rollout, and how
many log lines were printed (and how many were ping failures).

    python bench/outage.py --contender orsgen
    python bench/outage.py --contender trl
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "examples")]
os.environ.setdefault("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import ors_server  # noqa: E402

ECHO_ENV = ROOT / "examples" / "echo_env.py"
TARGETS = ["apple", "banana", "cherry", "damson"]


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}")


def contender(name: str, url: str) -> tuple[list[Any], Any]:
    if name == "orsgen":
        from generated.echo import EchoEnv, outcome_reward

        return [EchoEnv(base_url=url) for _ in range(4)], outcome_reward
    os.environ["OPENREWARD_API_URL"] = os.environ["OPENREWARD_SESSION_URL"] = url
    os.environ.setdefault("OPENREWARD_API_KEY", "bench")
    from trl.experimental.openreward import OpenRewardSpec

    spec = OpenRewardSpec(url, env_name="echoenv")
    return [spec.environment_factory() for _ in range(4)], spec.reward_funcs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contender", choices=["orsgen", "trl"], required=True)
    parser.add_argument("--outage", type=float, default=30.0)
    opts = parser.parse_args()
    handler = Lines()
    logging.getLogger().addHandler(handler)
    server = ors_server.start(ECHO_ENV)
    port = int(server.url.rsplit(":", 1)[1])
    envs, reward = contender(opts.contender, server.url)
    log: list[tuple[float, float | None]] = []
    raised: list[str] = []
    stop = threading.Event()

    def rollouts() -> None:
        task = 0
        while not stop.is_set():
            for env in envs:
                start = time.monotonic()
                try:
                    env.reset(task_index=task % 4)
                    try:
                        env.echo(text=TARGETS[task % 4])
                    except Exception:  # noqa: BLE001 - TRL catches a tool's raise (and counts it)
                        pass
                    log.append((start, reward(environments=[env])[0]))
                except Exception as exc:  # noqa: BLE001 - counted: this is what kills a trainer
                    raised.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
                task += 1

    worker = threading.Thread(target=rollouts, daemon=True)
    worker.start()
    try:
        while len(log) < 8:
            time.sleep(0.1)
        server.stop()
        down_at = time.monotonic()
        time.sleep(opts.outage)
        server = ors_server.start(ECHO_ENV, port=port)
        back_at = time.monotonic()
        while sum(1 for s, _ in log if s > back_at) < 8 and time.monotonic() - back_at < 240:
            time.sleep(0.2)
        stop.set()
        worker.join(timeout=120)
        during = [r for s, r in log if down_at <= s <= back_at]
        after = [r for s, r in log if s > back_at]
        scored = [s for s, r in log if s > down_at and r is not None]
        first = f"{min(scored) - back_at:+.1f} s" if scored else "never"
        pings = [line for line in handler.lines if "ping" in line.lower()]
        print(f"contender: {opts.contender}; outage: {opts.outage:g} s")
        print(f"exceptions that reached the caller: {len(raised)}")
        for line in raised[:5]:
            print(f"  {line}")
        print(f"rollouts started during the outage: {len(during)}, rewards {during}")
        print(f"rollouts started after the restart: {len(after)}, rewards {after}")
        print(f"first scored rollout started, relative to the restart: {first}")
        print(f"log lines: {len(handler.lines)} (ping failures: {len(pings)})")
        for line in handler.lines[:12]:
            print(f"  {line[:220]}")
    finally:
        stop.set()
        for env in envs:
            close = getattr(env, "close", None) or getattr(env, "_teardown_session", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001 - best effort at the end of a benchmark
                    pass
        server.stop()


if __name__ == "__main__":
    main()

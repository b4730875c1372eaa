"""One-command benchmark: orsgen's generated adapter vs TRL's bridge vs the raw SDK vs raw HTTP.

    python bench/run.py [--tasks 500] [--setup-delay 0.5] [--tool-latency 0.0]
                        [--calls 1000] [--group 8] [--k 8]

It serves bench/bench_env.py on 127.0.0.1 with the instrumented openreward server used
by the tests (tests/serve_env.py: request counts per "METHOD /path", open sessions),
measures everything side by side in one run, prints a table and writes
bench/results/latest.json and bench/results/latest.md. Figures are wall-clock on
whatever machine runs it; the targets are ratios within one run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import gc
import http.client
import json
import os
import pickle
import platform
import statistics
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "examples"), str(BENCH)]

for _k, _v in {
    "OPENREWARD_DISABLE_UPDATE_CHECK": "1",
    "OPENREWARD_LOG_LEVEL": "ERROR",
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TRL_EXPERIMENTAL_SILENCE": "1",
    "OPENREWARD_API_KEY": "bench",
}.items():
    os.environ.setdefault(_k, _v)

import ors_server  # noqa: E402  (tests/ors_server.py)

ENV = "benchenv"
Row = dict[str, Any]


def _requests(server: ors_server.RunningServer) -> dict[str, int]:
    return {k: v for k, v in server.requests().items() if k != "POST /ping"}


def _count(server: ors_server.RunningServer, fn: Callable[[], Any]) -> tuple[Any, float, int]:
    """Run fn, return (result, seconds, requests that reached the server, pings excluded)."""
    server.reset_counts()
    start = time.perf_counter()
    out = fn()
    took = time.perf_counter() - start
    return out, took, sum(_requests(server).values())


def _sdk_client(url: str) -> Any:
    os.environ["OPENREWARD_API_URL"] = url
    os.environ["OPENREWARD_SESSION_URL"] = url
    import openreward

    return openreward.OpenReward(api_key="bench", base_url=url)


# -- raw HTTP ---------------------------------------------------------------------------


class RawHTTP:
    """The ORS wire protocol by hand, on one keep-alive connection."""

    def __init__(self, url: str) -> None:
        host, port = url.rsplit("//", 1)[1].split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=60)
        self.sid: str | None = None

    def _req(self, method: str, path: str, body: Any = None, sid: str | None = None) -> bytes:
        headers = {"Content-Type": "application/json"}
        if sid:
            headers["X-Session-ID"] = sid
        self.conn.request(
            method, path, body=json.dumps(body) if body is not None else None, headers=headers
        )
        resp = self.conn.getresponse()
        data = resp.read()
        if resp.status >= 400:
            raise RuntimeError(f"{method} {path}: HTTP {resp.status} {data[:200]!r}")
        return data

    @staticmethod
    def _sse(data: bytes, event: str) -> str:
        current = None
        for line in data.decode().splitlines():
            if line.startswith("event:"):
                current = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and current == event:
                return line.split(":", 1)[1].strip()
        raise RuntimeError(f"no {event} event in {data[:200]!r}")

    def task_range(self, stop: int) -> list[Any]:
        return list(
            json.loads(
                self._req(
                    "POST", f"/{ENV}/task_range", {"split": "train", "start": 0, "stop": stop}
                )
            )["tasks"]
        )

    def open(self, index: int) -> str:
        self.sid = self._sse(self._req("POST", "/create_session"), "task_id")
        self._req(
            "POST", "/create", {"split": "train", "index": index, "env_name": ENV}, sid=self.sid
        )
        blocks = json.loads(self._req("GET", f"/{ENV}/prompt", sid=self.sid))
        return " ".join(b.get("text", "") for b in blocks)

    def call(self, name: str, args: dict[str, Any]) -> Any:
        return json.loads(
            self._sse(
                self._req("POST", f"/{ENV}/call", {"name": name, "input": args}, sid=self.sid),
                "end",
            )
        )

    def close(self) -> None:
        if self.sid:
            self._req("POST", "/delete", sid=self.sid)
            self._req("POST", "/delete_session", sid=self.sid)
            self.sid = None
        self.conn.close()


# -- the contenders -----------------------------------------------------------------------


def trl_spec(url: str, **kw: Any) -> Any:
    _sdk_client(url)
    from trl.experimental.openreward import OpenRewardSpec

    return OpenRewardSpec(url, env_name=ENV, **kw)


def _median_run(
    server: ors_server.RunningServer, fn: Callable[[], Any], repeats: int = 5
) -> tuple[Any, float, int]:
    """Median time of several runs (one run is too noisy on a shared 2-core machine);
    the request count is per run."""
    runs = [_count(server, fn) for _ in range(repeats)]
    times = sorted(t for _, t, _ in runs)
    return runs[-1][0], times[len(times) // 2], runs[-1][2]


def bench_dataset(server: ors_server.RunningServer, n: int) -> list[Row]:
    import benchenv
    from datasets import Dataset

    from orsgen.runtime.dataset import task_rows

    url = server.url
    rows: list[Row] = []
    raw = RawHTTP(url)
    raw.task_range(2)  # warm the connection
    tasks, t, r = _median_run(server, lambda: raw.task_range(n))
    assert len(tasks) == n
    rows.append({"impl": "raw HTTP (fetch only)", "seconds": t, "requests": r})
    # The same Dataset the adapter returns, built from the raw response: what a user
    # writing raw HTTP would have to do to fill GRPOTrainer(train_dataset=...).
    built, t, r = _median_run(
        server,
        lambda: Dataset.from_dict(task_rows(list(range(n)), raw.task_range(n), True, "train")),
    )
    assert len(built) == n
    rows.append({"impl": "raw HTTP + Dataset.from_dict", "seconds": t, "requests": r})
    raw.close()

    benchenv.load_tasks(num_tasks=2, base_url=url)  # first use loads datasets + openreward
    ds, t, r = _median_run(server, lambda: benchenv.load_tasks(num_tasks=n, base_url=url))
    assert len(ds) == n
    rows.append({"impl": "orsgen adapter", "seconds": t, "requests": r})

    env = _sdk_client(url).environments.get(ENV)
    env.get_task_range("train", 0, 2)
    got, t, r = _median_run(server, lambda: env.get_task_range("train", 0, n))
    assert len(got) == n
    rows.append({"impl": "raw SDK (get_task_range, no Dataset)", "seconds": t, "requests": r})

    trl_spec(url, num_tasks=2).train_dataset
    ds, t, r = _count(server, lambda: trl_spec(url, num_tasks=n).train_dataset)
    assert len(ds) == n
    rows.append({"impl": "TRL bridge", "seconds": t, "requests": r})
    return rows


def _lat(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples)
    return statistics.median(samples), samples[int(0.9 * (len(samples) - 1))]


def bench_calls(server: ors_server.RunningServer, m: int) -> list[Row]:
    """Tool-call latency. The implementations take turns call by call (round robin), so a
    drift in the machine's or the server's speed during the run reaches all of them alike;
    requests per call come from a separate counted pass of each implementation alone."""
    import benchenv

    url = server.url
    gen = benchenv.BenchEnv(base_url=url, prefetch=False)
    gen.reset(task_index=0)
    env = _sdk_client(url).environments.get(ENV)
    sdk_session = env.session(split="train", index=0)
    sess = sdk_session.__enter__()
    bridge = trl_spec(url).environment_factory()
    bridge.reset(task_index=0)
    raw = RawHTTP(url)  # last: the server drops a keep-alive connection idle for 5 s
    raw.open(0)
    calls: dict[str, Callable[[int], Any]] = {
        "raw HTTP": lambda i: raw.call("act", {"text": f"x{i}"}),
        "orsgen adapter": lambda i: gen.act(text=f"x{i}"),
        "raw SDK (session.call_tool)": lambda i: sess.call_tool("act", {"text": f"x{i}"}),
        "TRL bridge": lambda i: bridge.act(text=f"x{i}"),
    }
    try:
        requests: dict[str, float] = {}
        for name, call in calls.items():
            for i in range(5):
                call(i)  # warm
            server.reset_counts()
            for i in range(20):
                call(i)
            requests[name] = sum(_requests(server).values()) / 20
        times: dict[str, list[float]] = {name: [] for name in calls}
        for i in range(m):
            for name, call in calls.items():
                start = time.perf_counter()
                call(i)
                times[name].append(time.perf_counter() - start)
    finally:
        raw.close()
        gen.close()
        sdk_session.__exit__(None, None, None)
        bridge._close()
    rows: list[Row] = []
    for name in calls:
        med, p90 = _lat(times[name])
        rows.append(
            {
                "impl": name,
                "median_ms": med * 1e3,
                "p90_ms": p90 * 1e3,
                "requests_per_call": requests[name],
            }
        )
    return rows


def bench_group(server: ors_server.RunningServer, g: int) -> list[Row]:
    """G serial resets of one task on G instances, as GRPOTrainer does, under setup delay."""
    import benchenv

    url = server.url
    rows: list[Row] = []

    def group(make: Callable[[], Any], task: int, close: Callable[[Any], None]) -> float:
        envs = [make() for _ in range(g)]
        start = time.perf_counter()
        for env in envs:
            env.reset(task_index=task)
        took = time.perf_counter() - start
        for env in envs:
            close(env)
        return took

    fixed = functools.partial(benchenv.BenchEnv, base_url=url, group_size=g)
    rows.append(
        {
            "impl": f"orsgen adapter (group_size={g})",
            "seconds": group(fixed, 1, lambda e: e.close()),
        }
    )
    learned = functools.partial(benchenv.BenchEnv, base_url=url)
    group(learned, 2, lambda e: None)  # first group: the pattern is learned
    rows.append(
        {"impl": "orsgen adapter (learned G)", "seconds": group(learned, 3, lambda e: e.close())}
    )
    from orsgen.runtime.sessions import pool

    pool.forget()
    off = functools.partial(benchenv.BenchEnv, base_url=url, prefetch=False)
    rows.append(
        {"impl": "orsgen adapter (prefetch off)", "seconds": group(off, 4, lambda e: e.close())}
    )
    env = _sdk_client(url).environments.get(ENV)

    class SdkReset:
        def reset(self, task_index: int) -> None:
            self.cm = env.session(split="train", index=task_index)
            self.cm.__enter__().get_prompt()

    rows.append(
        {
            "impl": "raw SDK (serial)",
            "seconds": group(SdkReset, 5, lambda e: e.cm.__exit__(None, None, None)),
        }
    )
    factory = trl_spec(url).environment_factory
    rows.append({"impl": "TRL bridge", "seconds": group(factory, 6, lambda e: e._close())})
    return rows


def _rollout(factory: Any, task: int, calls: int) -> float | None:
    env = factory()
    env.reset(task_index=task)
    for i in range(calls):
        env.act(text=f"w{task}" if i == calls - 1 else "nope")
    reward = env.reward
    env.close()
    return reward


def bench_concurrency(
    server: ors_server.RunningServer, k: int, calls: int, repeats: int = 3
) -> list[Row]:
    """K rollouts one after another, then K at once on a thread pool, through a pickled
    factory; each is the median of ``repeats`` runs, taken in turns."""
    import benchenv

    factory = pickle.loads(
        pickle.dumps(functools.partial(benchenv.BenchEnv, base_url=server.url, prefetch=False))
    )
    serial_runs: list[float] = []
    conc_runs: list[float] = []
    for rep in range(repeats):
        base = 10 + 2 * k * rep
        start = time.perf_counter()
        serial = [_rollout(factory, base + i, calls) for i in range(k)]
        serial_runs.append(time.perf_counter() - start)
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=k) as pool:
            conc = list(pool.map(lambda i: _rollout(factory, base + k + i, calls), range(k)))
        conc_runs.append(time.perf_counter() - start)
        assert serial == conc == [1.0] * k
    t_serial, t_conc = statistics.median(serial_runs), statistics.median(conc_runs)
    rows: list[Row] = [
        {
            "impl": "orsgen adapter (pickled partial)",
            "serial_s": t_serial,
            "concurrent_s": t_conc,
            "speedup": t_serial / t_conc,
        }
    ]
    try:
        pickle.dumps(trl_spec(server.url).environment_factory)
        note = "pickles"
    except Exception as exc:  # noqa: BLE001
        note = f"cannot run: factory does not pickle ({type(exc).__name__})"
    rows.append(
        {
            "impl": "TRL bridge",
            "serial_s": None,
            "concurrent_s": None,
            "speedup": None,
            "note": note,
        }
    )
    return rows


def _child(code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(BENCH), str(ROOT / "tests")]),
    }
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def bench_leaks(server: ors_server.RunningServer) -> list[Row]:
    import benchenv

    url = server.url
    rows: list[Row] = []
    base = server.wait_sessions(0)

    def settle() -> int:
        return server.wait_sessions(base, timeout=5) - base

    envs = [benchenv.BenchEnv(base_url=url, group_size=4) for _ in range(4)]
    for e in envs:
        e.reset(task_index=30)
    for e in envs:
        e.close()
    after_close = settle()
    envs = [benchenv.BenchEnv(base_url=url, group_size=4) for _ in range(4)]
    for e in envs:
        e.reset(task_index=31)
    del envs, e
    gc.collect()
    after_gc = settle()
    child = _child(f"""
        import benchenv
        envs = [benchenv.BenchEnv(base_url={url!r}, group_size=4) for _ in range(4)]
        for e in envs:
            e.reset(task_index=32)
        """)
    assert child.returncode == 0, child.stderr
    after_exit = settle()
    rows.append(
        {
            "impl": "orsgen adapter",
            "after_close": after_close,
            "after_gc": after_gc,
            "after_exit": after_exit,
        }
    )

    factory = trl_spec(url).environment_factory
    envs = [factory() for _ in range(4)]
    for e in envs:
        e.reset(task_index=33)
    for e in envs:
        e._close()
    b_close = settle()
    envs = [factory() for _ in range(4)]
    for e in envs:
        e.reset(task_index=34)
    del envs, e
    gc.collect()
    time.sleep(0.5)
    b_gc = server.open_sessions() - base
    base = server.open_sessions()
    child = _child(f"""
        import os
        os.environ["OPENREWARD_API_URL"] = os.environ["OPENREWARD_SESSION_URL"] = {url!r}
        from trl.experimental.openreward import OpenRewardSpec
        f = OpenRewardSpec({url!r}, env_name="benchenv").environment_factory
        envs = [f() for _ in range(4)]
        for e in envs:
            e.reset(task_index=35)
        """)
    assert child.returncode == 0, child.stderr
    time.sleep(0.5)
    b_exit = server.open_sessions() - base
    rows.append(
        {"impl": "TRL bridge", "after_close": b_close, "after_gc": b_gc, "after_exit": b_exit}
    )
    return rows


def _importtime(module: str) -> float:
    child = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(BENCH)])},
        capture_output=True,
        text=True,
        timeout=120,
    )
    best = 0
    for line in child.stderr.splitlines():
        parts = line.split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[2].strip() == module:
            best = int(parts[1])
    return best / 1e6


def bench_import() -> list[Row]:
    return [
        {"impl": "orsgen adapter (import benchenv)", "seconds": _importtime("benchenv")},
        {"impl": "raw SDK (import openreward)", "seconds": _importtime("openreward")},
        {
            "impl": "TRL bridge (import trl.experimental.openreward)",
            "seconds": _importtime("trl.experimental.openreward"),
        },
    ]


# -- report -------------------------------------------------------------------------------


def _find(rows: list[Row], prefix: str) -> Row:
    return next(r for r in rows if r["impl"].startswith(prefix))


def verdicts(res: dict[str, Any], setup_delay: float, k: int) -> list[tuple[str, str, str, bool]]:
    ds = res["dataset"]
    raw_ds, gen_ds = _find(ds, "raw HTTP + Dataset"), _find(ds, "orsgen")
    calls = res["tool_call"]
    raw_c, gen_c = _find(calls, "raw HTTP"), _find(calls, "orsgen")
    grp = _find(res["group_reset"], "orsgen adapter (group_size")
    learned = _find(res["group_reset"], "orsgen adapter (learned")
    conc = _find(res["concurrency"], "orsgen")
    leaks = _find(res["leaks"], "orsgen")
    imp = _find(res["import"], "orsgen")
    ratio_ds = gen_ds["seconds"] / raw_ds["seconds"]
    ratio_c = gen_c["median_ms"] / raw_c["median_ms"]
    ratio_g = grp["seconds"] / setup_delay if setup_delay else float("nan")
    ratio_l = learned["seconds"] / setup_delay if setup_delay else float("nan")
    left = leaks["after_close"] + leaks["after_gc"] + leaks["after_exit"]
    return [
        (
            "dataset: time vs raw HTTP (+ same Dataset)",
            "<= 1.5x",
            f"{ratio_ds:.2f}x",
            ratio_ds <= 1.5,
        ),
        ("dataset: requests", "<= 2", str(gen_ds["requests"]), gen_ds["requests"] <= 2),
        ("tool call: median vs raw HTTP", "<= 1.25x", f"{ratio_c:.2f}x", ratio_c <= 1.25),
        (
            "tool call: requests per call",
            "1",
            f"{gen_c['requests_per_call']:.2f}",
            gen_c["requests_per_call"] <= 1.0,
        ),
        ("group reset (fixed G) vs one setup", "<= 1.5x", f"{ratio_g:.2f}x", ratio_g <= 1.5),
        ("group reset (learned G) vs one setup", "<= 1.5x", f"{ratio_l:.2f}x", ratio_l <= 1.5),
        (f"K={k} concurrent vs serial", ">= 7x", f"{conc['speedup']:.2f}x", conc["speedup"] >= 7),
        ("sessions open after close+GC+exit", "0", str(left), left == 0),
        ("generated package import", "<= 0.2 s", f"{imp['seconds']:.3f} s", imp["seconds"] <= 0.2),
    ]


def render(res: dict[str, Any], meta: dict[str, Any]) -> str:
    def fmt(v: Any, unit: str = "") -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.3f}{unit}" if v < 10 else f"{v:.2f}{unit}"
        return f"{v}{unit}"

    out = [
        f"# orsgen runtime benchmark\n",
        f"{meta['date']} on {meta['machine']}; {meta['params']}\n",
    ]
    out.append(
        f"\n## Dataset of {meta['tasks']} tasks\n\n| implementation | seconds | requests |\n|---|---:|---:|"
    )
    out += [f"| {r['impl']} | {fmt(r['seconds'])} | {r['requests']} |" for r in res["dataset"]]
    out.append(
        "\n## Tool call\n\n| implementation | median ms | p90 ms | requests/call |\n|---|---:|---:|---:|"
    )
    out += [
        f"| {r['impl']} | {fmt(r['median_ms'])} | {fmt(r['p90_ms'])} | {r['requests_per_call']:.2f} |"
        for r in res["tool_call"]
    ]
    out.append(
        f"\n## Group of {meta['group']} serial resets, setup {meta['setup_delay']} s\n\n| implementation | seconds | x one setup |\n|---|---:|---:|"
    )
    out += [
        f"| {r['impl']} | {fmt(r['seconds'])} | {r['seconds'] / meta['setup_delay']:.2f} |"
        for r in res["group_reset"]
    ]
    out.append(
        f"\n## K={meta['k']} rollouts through a pickled factory\n\n| implementation | serial s (median of 3) | concurrent s (median of 3) | speedup |\n|---|---:|---:|---:|"
    )
    out += [
        f"| {r['impl']} | {fmt(r['serial_s'])} | {fmt(r['concurrent_s'])} | {fmt(r['speedup'], 'x') if r['speedup'] else r.get('note', '-')} |"
        for r in res["concurrency"]
    ]
    out.append(
        "\n## Sessions left open (4 rollouts each)\n\n| implementation | after close | after GC | after exit |\n|---|---:|---:|---:|"
    )
    out += [
        f"| {r['impl']} | {r['after_close']} | {r['after_gc']} | {r['after_exit']} |"
        for r in res["leaks"]
    ]
    out.append("\n## Cold import\n\n| module | seconds |\n|---|---:|")
    out += [f"| {r['impl']} | {fmt(r['seconds'])} |" for r in res["import"]]
    out.append(
        "\n## Targets (ratios within this run)\n\n| target | goal | measured | met |\n|---|---|---:|---|"
    )
    out += [f"| {a} | {b} | {c} | {'yes' if d else 'NO'} |" for a, b, c, d in res["verdicts"]]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--tasks",
        type=int,
        default=500,
        help="tasks in the environment and in the dataset benchmark",
    )
    p.add_argument(
        "--setup-delay", type=float, default=0.5, help="seconds each session's setup() takes"
    )
    p.add_argument(
        "--tool-latency", type=float, default=0.0, help="seconds each tool call takes on the server"
    )
    p.add_argument(
        "--calls", type=int, default=1000, help="tool calls per implementation (taken in turns)"
    )
    p.add_argument("--group", type=int, default=8, help="GRPO group size (num_generations)")
    p.add_argument("--k", type=int, default=8, help="concurrent rollouts")
    p.add_argument(
        "--rollout-calls", type=int, default=3, help="tool calls per rollout in the K-way run"
    )
    p.add_argument("--out", type=Path, default=BENCH / "results")
    opts = p.parse_args(argv)

    base_env = {
        "BENCH_TASKS": str(max(opts.tasks, 64)),
        "BENCH_TOOL_LATENCY": str(opts.tool_latency),
    }
    os.environ.update(base_env, BENCH_SETUP_DELAY="0")
    fast = ors_server.start(BENCH / "bench_env.py")
    os.environ["BENCH_SETUP_DELAY"] = str(opts.setup_delay)
    slow = ors_server.start(BENCH / "bench_env.py")
    res: dict[str, Any] = {}
    try:
        print(
            f"servers up: {fast.url} (no setup delay), {slow.url} (setup {opts.setup_delay} s)",
            flush=True,
        )
        res["dataset"] = bench_dataset(fast, opts.tasks)
        print("dataset done", flush=True)
        res["tool_call"] = bench_calls(fast, opts.calls)
        print("tool calls done", flush=True)
        res["group_reset"] = bench_group(slow, opts.group)
        print("group reset done", flush=True)
        res["concurrency"] = bench_concurrency(slow, opts.k, opts.rollout_calls)
        print("concurrency done", flush=True)
        res["leaks"] = bench_leaks(fast)
        res["import"] = bench_import()
    finally:
        from orsgen.runtime import adapter

        adapter.close_all_sessions()
        fast.stop()
        slow.stop()
    res["verdicts"] = verdicts(res, opts.setup_delay, opts.k)
    meta = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "params": (
            f"tasks={opts.tasks} setup_delay={opts.setup_delay}s tool_latency={opts.tool_latency}s "
            f"calls={opts.calls} group={opts.group} k={opts.k}"
        ),
        "tasks": opts.tasks,
        "setup_delay": opts.setup_delay,
        "group": opts.group,
        "k": opts.k,
    }
    text = render(res, meta)
    print(text)
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "latest.json").write_text(json.dumps({"meta": meta, **res}, indent=2) + "\n")
    (opts.out / "latest.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

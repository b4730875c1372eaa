"""``orsgen sft`` and ``orsgen pairs`` at scale (issues 34, 35): peak memory, wall time and
CPU of the whole ``orsgen COMMAND RUN -o OUT`` process on evaluation runs of 10,000 and
100,000 rollouts.

    python bench/sft_scale.py [--command sft|pairs] [--rollouts 10000,100000] [--repeats 1]
        [--code DIR=LABEL...] [--work DIR] [--out DIR] [--append]

Each run directory is written as ``orsgen eval`` writes one (``run.json``, ``adapter.json``,
``results.jsonl`` with rows of ``orsgen.eval.run._row``'s keys), without a model: tasks of
10 samples, each rollout 16 messages of about 2 KB (a 2 KB prompt, 7 tool calls with 1.9 KB
arguments and 1.9 KB results, below what results.jsonl cuts, and a 2 KB answer), half of
them passing, three in ten scored and failing, one in ten unfinished or failed; every
transcript is unique. The runs are
kept in ``--work`` (default: a directory under the system's temporary one) and reused.

Each measurement is ``python -m orsgen COMMAND RUN -o OUT`` in a process of its own (``pairs``
with ``--per-task 2``: 2 pairs of each task), with
``PYTHONPATH`` set to the code measured (``--code DIR=LABEL``, default this checkout). Its
peak resident set is the peak of the sum over the process and its children (``save_to_disk``'s
worker), sampled every 20 ms, with the anonymous part (what the processes allocated) and the
file-backed part (libraries, and the pages of memory-mapped files they touched: ``datasets``
reads the Arrow file it wrote back through a memory map) apart; ``main_maxrss_mb`` is the
kernel's peak of the main process alone (``ru_maxrss`` from ``wait4``); ``load`` the
machine's 1-minute load average as the process started and ended. Goal: the peak at
100,000 rollouts within 10% of the peak at 10,000. Writes ``DIR/COMMAND_scale.json`` and
``DIR/COMMAND_scale.md`` (default bench/results).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
SAMPLES, CALLS, PROMPT, PIECE = 10, 7, 2048, 1900
OPTIONS = {"sft": [], "pairs": ["--per-task", "2"]}  # what each command is given
SHARDS = {"sft": "64 MB", "pairs": "16 MB"}  # the data files each command writes
TOOL = {
    "type": "function",
    "function": {
        "name": "draw",
        "description": "Draw a ticket.",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
}


def _text(label: str, size: int) -> str:
    return (label + " " + "lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]


def _row(task: int, sample: int) -> dict[str, Any]:
    k = (task * 7 + sample * 3) % 10
    verdict = "scored" if k < 9 else "failed"
    verdict = "unfinished" if k == 8 else verdict
    reward = (1.0 if k < 5 else 0.0) if verdict == "scored" else None
    label = f"task {task} sample {sample}"
    messages: list[dict[str, Any]] = [{"role": "user", "content": _text(label, PROMPT)}]
    for call in range(CALLS):
        arguments = json.dumps({"text": _text(f"{label} call {call}", PIECE - 12)})
        call_id = f"call_{task}_{sample}_{call}"
        function = {"name": "draw", "arguments": arguments}
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        )
        messages.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "name": "draw",
                "content": _text(f"{label} result {call}", PIECE),
            }
        )
    messages.append({"role": "assistant", "content": _text(f"{label} answer", PROMPT)})
    return {
        "task_index": task,
        "sample": sample,
        "split": "train",
        "reward": reward,
        "verdict": verdict,
        "reason": None if verdict == "scored" else f"{verdict} by the bench",
        "calls": CALLS,
        "turns": CALLS + 1,
        "seconds": 1.0,
        "endpoint_seconds": 0.5,
        "environment_seconds": 0.5,
        "messages": messages,
    }


def synthesize(directory: Path, rollouts: int) -> Path:
    """An evaluation run directory of ``rollouts`` rollouts (reused when already written)."""
    done = directory / ".complete"
    if done.is_file():
        return directory
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    tasks = rollouts // SAMPLES
    config = {
        "model": "bench",
        "endpoint": "http://127.0.0.1:1/v1",
        "split": "train",
        "n": SAMPLES,
        "task_indices": list(range(tasks)),
        "max_turns": 8,
        "pass_threshold": 1.0,
        "environment": "lotteryenv",
        "adapter": "LotteryEnv",
        "adapter_version": "0.1.0",
        "tools_sha256": "ab" * 32,
    }
    (directory / "run.json").write_text(json.dumps(config, indent=2))
    view = {"tools": [TOOL], "train_split": "train"}
    (directory / "adapter.json").write_text(json.dumps(view, indent=2))
    with (directory / "results.jsonl").open("w", encoding="utf-8") as fh:
        for task in range(tasks):
            for sample in range(SAMPLES):
                fh.write(json.dumps(_row(task, sample), sort_keys=True) + "\n")
    done.write_text("")
    return directory


def _watch(pid: int, peaks: dict[str, float], stop: threading.Event) -> None:
    """Keep the peaks of the process tree's resident set, anonymous and file-backed (MB)."""
    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return
    while not stop.is_set():
        rss = anon = 0
        try:
            for process in [root, *root.children(recursive=True)]:
                info = process.memory_info()
                rss += info.rss
                anon += info.rss - info.shared  # shared: RssFile + RssShmem
        except psutil.Error:
            pass
        for key, value in (("rss", rss), ("anon", anon), ("file", rss - anon)):
            peaks[key] = max(peaks.get(key, 0.0), value / 2**20)
        stop.wait(0.02)


def measure_one(code: Path, run: Path, out: Path, command: str = "sft") -> dict[str, Any]:
    """One ``orsgen COMMAND`` process: its figures."""
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)  # the command writes into what exists
    env = {**os.environ, "PYTHONPATH": str(code), "HF_DATASETS_CACHE": str(out.parent / "hf")}
    load = os.getloadavg()[0]
    started = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-m", "orsgen", command, str(run), "-o", str(out), *OPTIONS[command]],
        cwd=code,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    peaks: dict[str, float] = {}
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(child.pid, peaks, stop), daemon=True)
    watcher.start()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.monotonic() - started
    stop.set()
    watcher.join()
    child.returncode = os.waitstatus_to_exitcode(status)
    stdout, stderr = child.communicate()
    if child.returncode != 0:
        raise RuntimeError(stderr.decode()[-3000:])
    wrote = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    shutil.rmtree(out, ignore_errors=True)
    return {
        "peak_rss_mb": round(peaks.get("rss", 0.0), 1),
        "main_maxrss_mb": round(usage.ru_maxrss / 1024, 1),
        "peak_anon_mb": round(peaks.get("anon", 0.0), 1),
        "peak_file_mb": round(peaks.get("file", 0.0), 1),
        "seconds": round(seconds, 1),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "load": [round(load, 1), round(os.getloadavg()[0], 1)],
        "dataset_mb": round(wrote / 2**20, 1),
        "said": stdout.decode().strip(),
    }


def _commit(code: Path) -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=code, capture_output=True, text=True)
        return done.stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "orsgen")
    return git("rev-parse", "--short", "HEAD") + ("+changes" if dirty else "")


def _load(run: dict[str, Any]) -> str:
    """The machine's 1-minute load average as the run started and ended ("?": not recorded)."""
    return " to ".join(str(x) for x in run["load"]) if "load" in run else "?"


def report(runs: list[dict[str, Any]], out: Path, command: str = "sft") -> None:
    """COMMAND_scale.json and COMMAND_scale.md from the runs."""
    out.mkdir(parents=True, exist_ok=True)
    machine = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    results = json.dumps({"machine": machine, "runs": runs}, indent=2)
    (out / f"{command}_scale.json").write_text(results)
    lines = [
        f"# `{' '.join(['orsgen', command, *OPTIONS[command]])}` at scale",
        "",
        f"{machine['date']}, {machine['cpus']} CPUs, Python {machine['python']}, "
        f"`python bench/sft_scale.py --command {command}` (how the runs are made and "
        "measured: its docstring).",
        "",
        "| code | rollouts | results.jsonl MB | dataset MB | peak RSS MB | peak anonymous MB "
        "| peak file-backed MB | main process ru_maxrss MB | seconds | CPU seconds | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        lines.append(
            f"| {run['label']} ({run['commit']}) | {run['rollouts']:,} | {run['results_mb']} "
            f"| {run['dataset_mb']} | {run['peak_rss_mb']} | {run['peak_anon_mb']} "
            f"| {run['peak_file_mb']} | {run['main_maxrss_mb']} | {run['seconds']} "
            f"| {run['cpu_seconds']} | {_load(run)} |"
        )
    lines += [
        "",
        f"How to read it: the peak RSS is the process tree's (`orsgen {command}` and the worker",
        "process `save_to_disk` copies the dataset in). orsgen reads each results.jsonl one",
        "line at a time, twice: the first pass keeps a few numbers per candidate rollout",
        "(about 50 bytes; 80 for pairs), the second reads the chosen lines back into",
        "`Dataset.from_generator`, which writes 1,000 rows at a time. datasets then reads the",
        "Arrow file it wrote back through a memory map to copy it into the output, and the",
        "pages it touches count in the reading process's resident set: in one process the",
        "whole dataset would. So the copy runs in one worker process, a",
        f"{SHARDS[command]} shard at a time (`save_to_disk(num_proc=1, max_shard_size=...)`).",
        *(
            ["The old code (`main`, where measured) read the whole results.jsonl into memory,"]
            + ["messages included."]
            if command == "sft"
            else []
        ),
        "",
        "Peak at the largest run over the smallest, medians per code:",
        "",
    ]
    for label in dict.fromkeys(r["label"] for r in runs):
        mine = [r for r in runs if r["label"] == label]
        sizes = sorted({r["rollouts"] for r in mine})
        if len(sizes) < 2:
            continue

        def median(key: str, size: int, rows: list[dict[str, Any]] = mine) -> float:
            return float(statistics.median(r[key] for r in rows if r["rollouts"] == size))

        small, large = sizes[0], sizes[-1]
        for key, what in (("peak_rss_mb", "peak RSS"), ("peak_anon_mb", "peak anonymous")):
            ratio = median(key, large) / median(key, small)
            lines.append(f"- {label}, {what}: {ratio:.3f} ({large:,} over {small:,} rollouts)")
    (out / f"{command}_scale.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--command", choices=sorted(OPTIONS), default="sft")
    parser.add_argument("--rollouts", default="10000,100000")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--code", action="append", default=[], metavar="DIR=LABEL", help="code to measure"
    )
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "sft-scale")
    parser.add_argument("--out", type=Path, default=BENCH / "results")
    parser.add_argument("--append", action="store_true", help="keep the runs DIR holds")
    opts = parser.parse_args()
    codes = [c.partition("=")[::2] for c in opts.code] or [(str(ROOT), "this")]
    runs: list[dict[str, Any]] = []
    results = opts.out / f"{opts.command}_scale.json"
    if opts.append and results.is_file():
        runs = json.loads(results.read_text())["runs"]
    for rollouts in [int(r) for r in opts.rollouts.split(",")]:
        run = synthesize(opts.work / f"run-{rollouts}", rollouts)
        results_mb = round((run / "results.jsonl").stat().st_size / 2**20, 1)
        for repeat in range(opts.repeats):
            for directory, label in codes:
                out = opts.work / "out" / opts.command
                figures = measure_one(Path(directory), run, out, opts.command)
                runs.append(
                    {
                        "label": label,
                        "commit": _commit(Path(directory)),
                        "rollouts": rollouts,
                        "repeat": repeat,
                        "results_mb": results_mb,
                        **figures,
                    }
                )
                print(json.dumps(runs[-1]), flush=True)
    report(runs, opts.out, opts.command)


if __name__ == "__main__":
    main()

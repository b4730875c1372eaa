"""Offline generation at scale: time and peak memory of ``generate()`` for N tools.

Each tool has an enum, a list, an optional int and a nested object of one shared
shape (a ``$ref`` to the same ``Inner`` model), the shape that used to become one model
class per tool. Each run is ``orsgen DIR/snapshot.json -o OUT -q`` in a fresh
interpreter, so its time includes start-up and imports and its peak RSS is its own. The
machine may be shared: each size runs several times (min and spread are reported), and
after each run the time black needs to format the emitted modules once, whole, is taken
as the baseline.

    python bench/generate_scale.py                  # 60 and 600 tools, 5 runs each
    python bench/generate_scale.py --repeats 3 600  # one size

Writes bench/results/generate.json.
"""

from __future__ import annotations

import ast
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orsgen.snapshot.stored import Snapshot

RESULTS = Path(__file__).resolve().parent / "results" / "generate.json"


def tool(i: int) -> dict[str, Any]:
    return {
        "name": f"tool_{i:03d}",
        "description": f"Tool number {i}.",
        "input_schema": {
            "$defs": {
                "Inner": {
                    "properties": {
                        "label": {"type": "string", "title": "Label"},
                        "weight": {"type": "number", "title": "Weight", "default": 1.0},
                    },
                    "required": ["label"],
                    "title": "Inner",
                    "type": "object",
                }
            },
            "properties": {
                "mode": {"enum": ["fast", "slow", "exact"], "type": "string", "title": "Mode"},
                "items": {"items": {"type": "string"}, "type": "array", "title": "Items"},
                "limit": {
                    "anyOf": [{"type": "integer"}, {"type": "null"}],
                    "default": None,
                    "title": "Limit",
                },
                "inner": {"$ref": "#/$defs/Inner"},
            },
            "required": ["mode", "items", "inner"],
            "title": f"Tool{i:03d}Input",
            "type": "object",
        },
        "property_order": ["mode", "items", "limit", "inner"],
    }


def snapshot(n: int) -> Snapshot:
    from orsgen.snapshot.model import build

    environment = {
        "identity": {"class_name": "ScaleEnv", "deployment": None, "env_name": "scaleenv"},
        "message_block_types": ["text"],
        "sdk_version": "0",
        "server_version": "0",
        "splits": [{"name": "train", "num_tasks": 1, "type": "train"}],
        "supports_score_group": False,
        "target": {"kind": "url", "value": "http://127.0.0.1:1"},
        "task_tools": [],
        "task_tools_probe": {"enabled": False, "indices": [], "split": "train"},
        "terminal_tool": None,
        "tools": [tool(i) for i in range(n)],
    }
    package = {"class_name": "ScaleEnv", "name": "scale", "split": "train", "version": "1.0.0"}
    return build(environment, package)


def _regenerate(source: Path, out: Path) -> tuple[float, float, float]:
    """``orsgen DIR/snapshot.json -o OUT -q`` as a user runs it, in a fresh interpreter:
    wall seconds, CPU seconds (less sensitive to a shared machine) and peak RSS (MB)."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "orsgen", str(source), "-o", str(out), "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr = child.stderr.read().decode() if child.stderr else ""
    if child.returncode != 0:
        raise SystemExit(f"orsgen failed ({child.returncode}): {stderr[-2000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _black_once(out: Path) -> float:
    """CPU seconds black needs to format the emitted modules once (the floor for
    formatting them whole), in this process with black already imported."""
    from orsgen.generate.render import format_python

    sources = [p.read_text(encoding="utf-8") for p in sorted(out.glob("*.py"))]
    format_python("x = 1\n")  # black's own first-call setup is not the files' cost
    start = time.process_time()
    for text in sources:
        format_python(text)
    return time.process_time() - start


def measure(n: int, repeats: int) -> dict[str, Any]:
    """Regenerate ``n`` tools offline ``repeats`` times; the black-once baseline after each."""
    from orsgen.snapshot.model import dump

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "src" / "snapshot.json"
        source.parent.mkdir()
        source.write_text(dump(snapshot(n)), encoding="utf-8")
        seconds, cpu, peaks, black = [], [], [], []
        for i in range(repeats):
            out = Path(tmp) / f"run{i}" / "scale"
            wall, used, peak = _regenerate(source, out)
            seconds.append(round(wall, 2))
            cpu.append(round(used, 2))
            peaks.append(round(peak, 1))
            black.append(round(_black_once(out), 2))
        models = (out / "models.py").read_text(encoding="utf-8")
        adapter = (out / "adapter.py").read_text(encoding="utf-8")
    classes = sum(isinstance(node, ast.ClassDef) for node in ast.parse(models).body)
    return {
        "tools": n,
        "repeats": repeats,
        "seconds_min": min(seconds),
        "seconds_spread": round(max(seconds) - min(seconds), 2),
        "seconds": seconds,
        "cpu_seconds_min": min(cpu),
        "cpu_seconds": cpu,
        "peak_rss_mb_max": max(peaks),
        "black_once_seconds_min": min(black),
        "black_once_seconds": black,
        "model_classes": classes,
        "adapter_lines": adapter.count("\n"),
    }


def main(argv: list[str]) -> None:
    repeats = 5
    if argv[:1] == ["--repeats"]:
        repeats, argv = int(argv[1]), argv[2:]
    sizes = [int(a) for a in argv] or [60, 600]
    runs = []
    for n in sizes:
        runs.append(measure(n, repeats))
        print(json.dumps(runs[-1]))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "machine": f"{platform.platform()}, Python {platform.python_version()}",
                "what": "orsgen DIR/snapshot.json -o OUT -q, wall time and peak RSS of that "
                "process; black_once: black formatting the emitted modules once, whole",
                "runs": runs,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main(sys.argv[1:])

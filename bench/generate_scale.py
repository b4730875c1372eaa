"""Offline generation at scale: time and peak memory of ``generate()`` for N tools.

Each tool has an enum, a list, an optional int and a nested object of one shared
shape (a ``$ref`` to the same ``Inner`` model), the shape that used to become one model
class per tool. Each size runs in a fresh interpreter, so peak RSS is that run's alone.

    python bench/generate_scale.py            # 60 and 600 tools
    python bench/generate_scale.py 600        # one size

Writes bench/results/generate.json.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
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


def measure(n: int) -> dict[str, Any]:
    """In this process: generate once and report time, peak RSS and output size."""
    import ast
    import resource
    import time

    snap = snapshot(n)
    from orsgen.generate import generate

    start = time.perf_counter()
    result = generate(snap)
    seconds = time.perf_counter() - start
    if not result.ok:
        raise SystemExit(f"generation failed: {result.diagnostics[:3]}")
    models = result.files.get("models.py", "")
    classes = sum(isinstance(n, ast.ClassDef) for n in ast.parse(models).body) if models else 0
    return {
        "tools": n,
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "model_classes": classes,
        "adapter_lines": result.files["adapter.py"].count("\n"),
    }


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        print(json.dumps(measure(int(argv[1]))))
        return
    sizes = [int(a) for a in argv] or [60, 600]
    runs = []
    for n in sizes:
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(n)], check=True, capture_output=True, text=True
        ).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
        print(runs[-1])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {"machine": f"{platform.platform()}, Python {platform.python_version()}", "runs": runs},
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main(sys.argv[1:])

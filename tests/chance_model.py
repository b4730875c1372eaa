"""The tiny model (examples/tiny_model.py) for tests/envs/chance_env.py, served by
``transformers serve`` for the evaluation tests and bench/eval.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from tiny_model import Episode, build_tiny_model

CHANCE_ENV = Path(__file__).resolve().parent / "envs" / "chance_env.py"
_spec = importlib.util.spec_from_file_location("_chance_tasks", CHANCE_ENV)
assert _spec is not None and _spec.loader is not None
_chance = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_chance)
SPLITS: dict[str, list[dict[str, Any]]] = _chance.SPLITS  # the environment's tasks, by split


def warm_chance_model(out_dir: Path, adapter: Any, tasks: list[dict[str, Any]]) -> Path:
    """The tiny model, warmed up to call ``say`` with the word of each prompt of
    tests/envs/chance_env.py (then to answer "Done."), on exactly the tool JSON the
    adapter's methods give (a tiny model answers other tool text with gibberish)."""
    episodes = [Episode(f"Say {t['word']!r}.", {"text": t["word"]}, _said(t)) for t in tasks]
    return build_tiny_model(out_dir, tools=[adapter.say], episodes=episodes, tool_name="say")


def _said(task: dict[str, Any]) -> str:
    return "heard" if float(task["p"]) < 0 else f"said: {task['word']}"

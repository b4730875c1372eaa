"""A real OpenAI-compatible server for the evaluation tests: ``transformers serve`` of a
tiny local model (examples/tiny_model.py) on 127.0.0.1, started on a free port, waited for
on ``/health``, stopped by PID (see /work/shared/E2E_CPU.md's last section)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ors_server import free_port, stop_process


@dataclass
class ModelServer:
    model_dir: Path
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model(self) -> str:
        return str(self.model_dir)

    def stop(self) -> None:
        stop_process(self.process)


def _transformers_command() -> list[str]:
    exe = Path(sys.executable).with_name("transformers")
    return [str(exe)] if exe.exists() else [shutil.which("transformers") or "transformers"]


def start_model_server(
    model_dir: Path, log_dir: Path, port: int | None = None, timeout: float = 180.0
) -> ModelServer:
    port = port or free_port()
    log = log_dir / f"transformers-serve-{port}.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    args = [*_transformers_command(), "serve", str(model_dir)]
    args += ["--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    with log.open("wb") as fh:
        process = subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"transformers serve exited early:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as resp:
                if resp.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop_process(process)
            raise RuntimeError(f"transformers serve did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.25)
    return ModelServer(model_dir, port, process, log)


def warm_chance_model(out_dir: Path, adapter: Any, tasks: list[dict[str, Any]]) -> Path:
    """The tiny model, warmed up to call ``say`` with the word of each prompt of
    tests/envs/chance_env.py (then to answer "Done."), on exactly the tool JSON the
    adapter's methods give."""
    from tiny_model import Episode, build_tiny_model

    episodes = [Episode(f"Say {t['word']!r}.", {"text": t["word"]}, _said(t)) for t in tasks]
    return build_tiny_model(out_dir, tools=[adapter.say], episodes=episodes, tool_name="say")


def _said(task: dict[str, Any]) -> str:
    return "heard" if float(task["p"]) < 0 else f"said: {task['word']}"

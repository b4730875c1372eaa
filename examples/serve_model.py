"""Serve a local model directory over the OpenAI chat-completions API with ``transformers
serve`` on 127.0.0.1: started on a free port, waited for on ``/health``, stopped by PID.
Used by examples/eval_demo.py, bench/eval.py and the evaluation tests.

    server = start_model_server(Path("tiny-model"), log_dir=Path("/tmp"))
    ...  # openai.OpenAI(base_url=server.endpoint, api_key="local"), model=server.model
    server.stop()

With ``None`` for the model, one server serves any local model directory on demand: each
request names its model by path (``model="runs/demo/model-after"``), and the server loads it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process(process: subprocess.Popen[Any]) -> None:
    """Terminate by PID; kill after 10 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@dataclass
class ModelServer:
    model_dir: Path | None  # None: models loaded on demand, named by path in each request
    port: int
    process: subprocess.Popen[bytes]
    log: Path
    scratch: Path | None = None  # a directory of the server's own, removed at stop

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model(self) -> str:
        if self.model_dir is None:
            raise ValueError("this server has no model of its own: name one per request")
        return str(self.model_dir)

    def stop(self) -> None:
        stop_process(self.process)
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


# transformers' own CLI, run by this interpreter: a virtualenv that reuses another's
# packages (a .pth file) has no `transformers` script of its own, and a `transformers` on
# PATH may belong to another Python.
TRANSFORMERS_CLI = [sys.executable, "-m", "transformers.cli.transformers"]


def start_model_server(
    model_dir: Path | None,
    log_dir: Path,
    port: int | None = None,
    timeout: float = 180.0,
    seed: int | None = None,
) -> ModelServer:
    """``transformers serve`` of ``model_dir`` (or, with ``None``, of any local model a
    request names), up and answering ``/health``. ``seed`` seeds the server's torch once
    at start (``--default-seed``), so the same requests in the same order sample alike."""
    port = port or free_port()
    log = log_dir / f"transformers-serve-{port}.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    args = [*TRANSFORMERS_CLI, "serve", *([str(model_dir)] if model_dir is not None else [])]
    args += ["--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    args += ["--default-seed", str(seed)] if seed is not None else []
    return _serve(args, env, model_dir, port, log, "transformers serve", timeout)


def start_vllm_server(
    model_dir: Path,
    log_dir: Path,
    python: Path,
    port: int | None = None,
    timeout: float = 600.0,
    max_model_len: int = 1024,
) -> ModelServer:
    """vLLM's OpenAI server of ``model_dir``, run by ``python`` (the env that
    scripts/vllm_cpu.sh builds: vLLM cannot share orsgen's), with the hermes tool-call
    parser, up and answering ``/health``. Its caches go to ``log_dir`` (``VLLM_CACHE_ROOT``),
    not the home folder. ``max_model_len`` must not exceed the model's
    ``max_position_embeddings``."""
    port = port or free_port()
    log = log_dir / f"vllm-{port}.log"
    # Not PYTHONPATH: the tests set it to orsgen's tree, which is not this interpreter's.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    # Its caches and temporary files (a file per engine start) stay in log_dir.
    env |= {"VLLM_CACHE_ROOT": str(log_dir / "vllm-cache"), "TMPDIR": str(log_dir)}
    env |= {"VLLM_NO_USAGE_STATS": "1"}
    # Its engine's IPC sockets are Unix sockets, whose path may not exceed 107 bytes: in a
    # short directory of their own, not under log_dir (a pytest worker's tmp_path is longer).
    sockets = Path(tempfile.mkdtemp(prefix="vllm-ipc-"))
    env |= {"VLLM_RPC_BASE_PATH": str(sockets)}
    # `vllm serve` fails with PackageNotFoundError: the distribution is vllm-cpu, not vllm.
    args = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir)]
    args += ["--host", "127.0.0.1", "--port", str(port), "--max-model-len", str(max_model_len)]
    args += ["--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--enforce-eager"]
    # The weights' own float32, not vLLM's bfloat16 downcast: the tiny model's warm-up made
    # its tokens likely in float32.
    args += ["--dtype", "float32"]
    try:
        server = _serve(args, env, model_dir, port, log, "vLLM", timeout)
    except BaseException:
        shutil.rmtree(sockets, ignore_errors=True)
        raise
    server.scratch = sockets
    return server


def _serve(
    args: list[str],
    env: dict[str, str],
    model_dir: Path | None,
    port: int,
    log: Path,
    what: str,
    timeout: float,
) -> ModelServer:
    """Start ``args`` with its output to ``log``; wait until it answers ``/health``."""
    with log.open("wb") as fh:
        process = subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT, env=env)

    def healthy() -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as resp:
            return bool(resp.status == 200)

    wait_until_ready(process, healthy, log, what, timeout, interval=0.25)
    return ModelServer(model_dir, port, process, log)


def wait_until_ready(
    process: subprocess.Popen[Any],
    ready: Callable[[], bool],
    log: Path,
    what: str,
    timeout: float,
    interval: float = 0.1,
) -> None:
    """Poll ``ready()`` (an ``OSError`` counts as not yet) until it is true. Raise, with the
    end of ``log``, if ``process`` exits first or ``timeout`` passes (then it is stopped)."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited early:\n{log.read_text()[-3000:]}")
        try:
            if ready():
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop_process(process)
            raise RuntimeError(f"{what} did not start:\n{log.read_text()[-3000:]}")
        time.sleep(interval)

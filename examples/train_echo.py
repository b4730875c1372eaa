"""Train with TRL's GRPOTrainer against the echo ORS environment, on CPU, offline.

It shows the three exports of a generated orsgen package plugged into GRPOTrainer::

    from generated.echo import EchoEnv, load_tasks, outcome_reward

    GRPOTrainer(model=...,
                train_dataset=load_tasks(base_url=url),                        # datasets.Dataset
                environment_factory=functools.partial(EchoEnv, base_url=url),  # picklable factory
                reward_funcs=outcome_reward)

Run from the repository root, after ``bash scripts/install.sh``::

    python examples/train_echo.py                      # starts examples/echo_env.py on 127.0.0.1
    python examples/train_echo.py --base-url http://127.0.0.1:8080   # or use a running server

On several processes (CPU, gloo), every rank against one running server::

    python examples/echo_env.py --port 8080 &
    torchrun --nproc_per_node 2 examples/train_echo.py --base-url http://127.0.0.1:8080

There is no model hub here: the model is a ~115k-parameter Qwen3 built locally by
examples/tiny_model.py and warmed up for a second on the task, so that the two
GRPO steps show real tool calls reaching the server and real rewards.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import warnings
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# Offline and quiet: no model hub, no package-index update check.
for _var, _value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRL_EXPERIMENTAL_SILENCE": "1",
    "OPENREWARD_DISABLE_UPDATE_CHECK": "1",
}.items():
    os.environ.setdefault(_var, _value)

# The generated package lives in the repository (generated/echo), not in site-packages.
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from generated.echo import EchoEnv, load_tasks, outcome_reward  # noqa: E402
from tiny_model import Episode, build_tiny_model, cpu_grpo_config  # noqa: E402

ENV_NAME = "echoenv"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(log_path: Path, timeout: float = 60.0) -> tuple[subprocess.Popen[bytes], str]:
    """Serve examples/echo_env.py on 127.0.0.1 on a free port; wait until it answers."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, str(HERE / "echo_env.py"), "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "OPENREWARD_LOG_LEVEL": "WARNING"},
        )
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the echo server exited early:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/{ENV_NAME}/tools", timeout=2) as resp:
                json.loads(resp.read())
            return process, url
        except OSError:
            if time.monotonic() > deadline:
                stop_server(process)
                raise RuntimeError(f"the echo server did not start:\n{log_path.read_text()}")
            time.sleep(0.1)


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """Stop the server this script started, by its PID."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def warm_up_episodes(url: str, dataset: Any) -> list[Episode]:
    """Read each task's real prompt and the echo tool's real answer through the adapter,
    so the tiny model is taught exactly the text the rollouts will see."""
    env = EchoEnv(base_url=url)
    episodes = []
    try:
        for row in dataset:
            prompt = env.reset(**row)
            answer = env.echo(text=row["target"])
            episodes.append(Episode(prompt, {"text": row["target"]}, answer))
    finally:
        env.close()
    return episodes


def _rank() -> tuple[int, int]:
    """This process's rank and the world size (torchrun sets both; 0 and 1 otherwise)."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def train(url: str, workdir: Path, steps: int) -> dict[str, Any]:
    """Train; return what this process did: its steps and its last batch's rewards."""
    import torch
    from trl import GRPOTrainer  # type: ignore[attr-defined]

    torch.set_num_threads(1)  # two threads oversubscribe a 2-core machine
    # TRL 1.16 itself reads transformers' deprecated `is_gradient_checkpointing` on every
    # generation (trl/models/utils.py); nothing here asks for it, so silence only that one.
    warnings.filterwarnings(
        "ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning
    )

    train_dataset = load_tasks(base_url=url)
    print(f"dataset: {train_dataset.num_rows} tasks, columns {train_dataset.column_names}")

    tools = EchoEnv(base_url=url)  # construction does no network I/O
    model_dir = build_tiny_model(
        workdir / "tiny-model",
        tools=[tools.echo, tools.hint],
        episodes=warm_up_episodes(url, train_dataset),
        tool_name="echo",
    )
    print(f"tiny model: {model_dir} {json.loads((model_dir / 'warmup.json').read_text())}")

    args = cpu_grpo_config(workdir / "grpo", max_steps=steps)
    trainer = GRPOTrainer(
        model=str(model_dir),
        args=args,
        train_dataset=train_dataset,
        environment_factory=functools.partial(EchoEnv, base_url=url),
        reward_funcs=outcome_reward,
    )
    try:
        trainer.train()
        last_batch = outcome_reward(trainer.environments or [])
    finally:
        # TRL never closes the environments it pools; close_all() ends every session of
        # the class in this process (a classmethod, so TRL never offers it as a tool).
        EchoEnv.close_all()

    for entry in trainer.state.log_history:
        if "rewards/outcome_reward/mean" in entry:
            print(
                f"step {entry['step']}: reward mean {entry['rewards/outcome_reward/mean']:.3f} "
                f"(std {entry['rewards/outcome_reward/std']:.3f}), "
                f"tool calls per rollout {entry.get('tools/call_frequency', 0.0):.2f}, "
                f"grad_norm {entry.get('grad_norm', float('nan')):.4f}"
            )
    rank, world = _rank()
    who = f"rank {rank} of {world}: " if world > 1 else ""
    print(f"{who}rewards of this process's last batch: {last_batch}")
    return {
        "rank": rank,
        "world_size": world,
        "steps": trainer.state.global_step,
        "last_batch_rewards": last_batch,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--base-url", help="a running echo ORS server (default: start one on 127.0.0.1)"
    )
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps (default: 2)")
    parser.add_argument("--output-dir", type=Path, help="keep the model and trainer output here")
    parser.add_argument(
        "--result-dir",
        type=Path,
        help="write rank-N.json (this process's steps and last-batch rewards) here",
    )
    opts = parser.parse_args(argv)
    rank, world = _rank()
    if world > 1 and opts.base_url is None:
        # Each rank would otherwise start a server of its own: the ranks must share one.
        parser.error(
            f"{world} processes need one shared server: start examples/echo_env.py "
            "and pass --base-url"
        )

    with tempfile.TemporaryDirectory(prefix="train-echo-") as tmp:
        workdir = (opts.output_dir or Path(tmp)) / (f"rank-{rank}" if world > 1 else "")
        workdir.mkdir(parents=True, exist_ok=True)
        server = None
        url = opts.base_url
        if url is None:
            server, url = start_server(Path(tmp) / "echo-server.log")
            print(f"echo server: {url} (pid {server.pid})")
        try:
            result = train(url.rstrip("/"), workdir, opts.steps)
            if opts.result_dir is not None:
                opts.result_dir.mkdir(parents=True, exist_ok=True)
                (opts.result_dir / f"rank-{rank}.json").write_text(json.dumps(result))
        finally:
            if server is not None:
                stop_server(server)
                print(f"echo server stopped (pid {server.pid})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

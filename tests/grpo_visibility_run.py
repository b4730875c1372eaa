"""A real GRPOTrainer run for tests/test_e2e_grpo_visibility.py, in a process of its own
(trackio reads ``TRACKIO_DIR`` when it is imported): the generated echo package's
``outcome_reward``, ``report_to="trackio"``, ``log_completions=True`` and the runtime's
``TaskTableCallback``. Any connection to a host other than 127.0.0.1 is refused and
recorded, so the run shows it never reached the network.

Usage: python grpo_visibility_run.py URL WORKDIR; writes WORKDIR/result.json.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "examples"), str(ROOT / "tests")]

refused: list[str] = []
_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: Any) -> Any:
    host = address[0] if isinstance(address, tuple) else str(address)
    if self.family in (socket.AF_INET, socket.AF_INET6) and host not in ("127.0.0.1", "::1"):
        refused.append(str(host))
        raise OSError(f"network refused in this test: {host}")
    return _connect(self, address)


socket.socket.connect = _loopback_only  # type: ignore[method-assign]

PROJECT = "orsgen-visibility"


def main(url: str, work: Path) -> None:
    import functools

    import torch

    torch.set_num_threads(1)
    import tiny_model
    from train_echo import warm_up_episodes  # examples/train_echo.py's own warm-up data
    from trl import GRPOTrainer

    from generated.echo import EchoEnv, load_tasks, outcome_reward
    from orsgen.runtime.task_callback import TaskTableCallback

    dataset = load_tasks(base_url=url)
    probe = EchoEnv(base_url=url)  # no I/O: only to hand the tool methods to the builder
    model_dir = tiny_model.build_tiny_model(
        work / "tiny",
        tools=[probe.echo, probe.hint],
        episodes=warm_up_episodes(url, dataset),
        tool_name="echo",
    )
    args = tiny_model.cpu_grpo_config(
        work / "out",
        max_steps=3,
        report_to="trackio",
        project=PROJECT,
        run_name="visibility",
        log_completions=True,
        trackio_static_space_id=False,
    )
    trainer = GRPOTrainer(
        model=str(model_dir),
        args=args,
        train_dataset=dataset,
        environment_factory=functools.partial(
            EchoEnv, base_url=url, trajectories=work / "trajectories.jsonl"
        ),
        reward_funcs=outcome_reward,
        callbacks=[TaskTableCallback()],
    )
    try:
        trainer.train()
    finally:
        EchoEnv.close_all()

    from trackio.sqlite_storage import SQLiteStorage

    import trackio

    runs = [run.name for run in trackio.Api().runs(PROJECT)]
    logged = SQLiteStorage.get_logs(PROJECT, runs[0]) if runs else []
    result = {
        "log_history": trainer.state.log_history,
        "trackio_runs": runs,
        "trackio_logs": [
            {k: v for k, v in entry.items() if k.startswith(("ors/", "train/"))}
            | {"step": entry.get("step")}
            for entry in logged
        ],
        "refused": refused,
    }
    (work / "result.json").write_text(json.dumps(result, default=str), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))

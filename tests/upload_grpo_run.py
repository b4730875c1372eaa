"""One real ``GRPOTrainer.train()`` on CPU (the tiny model of tests/test_e2e_grpo.py, the
echo server), with or without ``upload_run=``, in a process of its own so that its exit
flush is the real one. For tests/test_runtime_upload_grpo.py. Prints one JSON line: every
rollout the reward function scored (task, reward, step), ``train()``'s wall seconds, the
``ors/upload_dropped`` the trainer logged, and any exception.

    python tests/upload_grpo_run.py SERVER_URL MODEL_DIR OUT STEPS [--upload]
        [--kill-pid PID --kill-at-step K]

Under ``torchrun`` each rank trains in ``OUT/rank-N`` and also writes its line, with its
rank, world size, pid and the time ``main()`` returned (before the exit's flush), to
``OUT/report-rank-N.json``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "examples"), str(ROOT / "tests")]

SECRET = "sk-grpo-upload-SECRET-c0de"
OVERRIDE = "override-grpo-value-5eed"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("server")
    p.add_argument("model")
    p.add_argument("out")
    p.add_argument("steps", type=int)
    p.add_argument("--upload", action="store_true")
    p.add_argument("--kill-pid", type=int)
    p.add_argument("--kill-at-step", type=int, default=-1)
    a = p.parse_args()

    import torch
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    import tiny_model
    from generated.echo import EchoEnv, load_tasks, outcome_reward

    torch.set_num_threads(1)
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    out = Path(a.out) / f"rank-{rank}" if world > 1 else Path(a.out)
    scored: list[dict[str, Any]] = []

    def recording_reward(environments: Any, **kwargs: Any) -> list[float | None]:
        rewards = outcome_reward(environments, **kwargs)
        step = kwargs["trainer_state"].global_step
        for env, reward in zip(environments, rewards):
            scored.append({"task": env.rollout.task_index, "reward": reward, "step": step})
        return rewards

    recording_reward.__name__ = outcome_reward.__name__

    class Kill(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if a.kill_pid and state.global_step == a.kill_at_step:
                os.kill(a.kill_pid, signal.SIGKILL)  # the platform API goes away mid-run

    extra = {"upload_run": "grpo-upload"} if a.upload else {}
    factory = functools.partial(EchoEnv, base_url=a.server, secrets={"TOKEN": SECRET}, **extra)
    trainer = GRPOTrainer(
        model=a.model,
        args=tiny_model.cpu_grpo_config(out, max_steps=a.steps),
        train_dataset=load_tasks(base_url=a.server),
        environment_factory=factory,
        reward_funcs=recording_reward,
        callbacks=[Kill()],
    )
    error = None
    started = time.monotonic()
    try:
        trainer.train()
    except Exception as exc:  # noqa: BLE001 - reported to the test
        error = f"{type(exc).__name__}: {exc}"
    seconds = time.monotonic() - started
    EchoEnv.close_all()
    dropped = sum(h.get("ors/upload_dropped", 0.0) for h in trainer.state.log_history)
    result = {"scored": scored, "seconds": seconds, "error": error, "dropped": dropped}
    print(json.dumps(result, sort_keys=True), flush=True)
    if world > 1:
        result.update(rank=rank, world_size=world, pid=os.getpid(), returned_at=time.time())
        (Path(a.out) / f"report-rank-{rank}.json").write_text(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()

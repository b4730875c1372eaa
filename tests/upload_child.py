"""A process that runs echo rollouts with ``upload_run=`` and exits (so its exit flush is
the real one), for tests/test_runtime_upload.py. Prints one JSON line: each rollout's
reward and wall seconds (reset to settled), the ``ors/upload_dropped`` it logged, and any
exception a rollout raised.

    python tests/upload_child.py SERVER_URL N [--upload] [--kill-pid PID --kill-at K]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from generated.echo import EchoEnv, outcome_reward  # noqa: E402
from orsgen.runtime.records import metrics  # noqa: E402
from orsgen.runtime.upload import UploadRun  # noqa: E402

SECRET = "sk-upload-test-SECRET-41d2"
OVERRIDE = "override-upload-value-9e0c"
WORDS = ["apple", "banana", "cherry", "damson"]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("server")
    p.add_argument("n", type=int)
    p.add_argument("--upload", action="store_true")
    p.add_argument("--kill-pid", type=int)
    p.add_argument("--kill-at", type=int, default=-1)
    a = p.parse_args()
    extra = {"upload_run": UploadRun("upload-test", model_name="tiny-model")} if a.upload else {}
    env = EchoEnv(base_url=a.server, secrets={"TOKEN": SECRET}, prefetch=False, **extra)
    rewards, seconds, errors, dropped = [], [], [], 0.0
    for i in range(a.n):
        if i == a.kill_at and a.kill_pid:
            os.kill(a.kill_pid, signal.SIGKILL)  # the platform API goes away mid-run
        started = time.monotonic()
        try:
            task = i % len(WORDS)
            prompt = env.reset(task_index=task, split="train")
            miss = env.echo(text="wrong")
            hit = env.echo(text=WORDS[task])
            calls = [
                {
                    "id": f"a{i}",
                    "type": "function",
                    "function": {"name": "echo", "arguments": json.dumps({"text": "wrong"})},
                },
                {
                    "id": f"b{i}",
                    "type": "function",
                    "function": {"name": "echo", "arguments": json.dumps({"text": WORDS[task]})},
                },
            ]
            completion = [
                {"role": "assistant", "content": f"two tries for task {task}", "tool_calls": calls},
                {"role": "tool", "tool_call_id": f"a{i}", "content": str(miss)},
                {"role": "tool", "tool_call_id": f"b{i}", "content": str(hit)},
                {"role": "assistant", "content": f"done with rollout {i}"},
            ]
            logged: dict[str, float] = {}
            (reward,) = outcome_reward(
                [env],
                completions=[completion],
                prompts=[[{"role": "user", "content": prompt}]],
                log_metric=logged.__setitem__,
            )
            dropped += logged.get("ors/upload_dropped", 0.0)
            rewards.append(reward)
        except Exception as exc:  # noqa: BLE001 - reported to the test
            errors.append(f"{type(exc).__name__}: {exc}")
        seconds.append(time.monotonic() - started)
    env.close()
    dropped += metrics.counts().drain().get("ors/upload_dropped", 0.0)
    print(
        json.dumps(
            {"rewards": rewards, "seconds": seconds, "errors": errors, "dropped": dropped},
            sort_keys=True,
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()

"""Run directories and trajectory files for the viewer's tests, in the formats orsgen
writes them (``results.jsonl`` rows of :func:`orsgen.eval.workers._row`, trajectory lines of
:func:`orsgen.runtime.trajectories.writer.line`), built without a model so that a test
knows every verdict, reward and text it must find on the page."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

# A 1x1 PNG, as an image part of a tool result would carry it.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f80f0000010101005f5bd1f60000000049454e44ae426082"
    )
).decode()
SECRET = "sk-viewer-test-SECRET-9f3a"
OVERRIDE = "override-value-77c1"


def verdict_of(task: int, sample: int) -> tuple[str, float | None, str | None]:
    """A fixed, varied outcome per (task, sample)."""
    k = (task * 7 + sample * 3) % 10
    if k < 4:
        return "scored", 1.0, None
    if k < 7:
        return "scored", round(k / 10, 1), None
    if k < 9:
        return "unfinished", None, "max turns (8) reached"
    return "failed", None, "environment: HTTP 503 after retries"


# Why each rollout ended, by its verdict; a failed one's endpoint reported no usage.
STOP_OF = {"scored": "finished", "unfinished": "max_turns", "failed": "error"}


def usage_of(task: int, sample: int) -> dict[str, int | None]:
    if verdict_of(task, sample)[0] == "failed":
        return {"prompt_tokens": None, "completion_tokens": None}
    return {"prompt_tokens": 100 + task, "completion_tokens": 10 + sample}


def eval_row(task: int, sample: int, long_text: bool = False) -> dict[str, Any]:
    verdict, reward, reason = verdict_of(task, sample)
    output = f"result of task {task} sample {sample}" + (" lorem" * 400 if long_text else "")
    return {
        "task_index": task,
        "sample": sample,
        "split": "test",
        "reward": reward,
        "verdict": verdict,
        "reason": reason,
        "calls": 1,
        "turns": 2,
        "seconds": 1.25,
        "endpoint_seconds": 1.0,
        "environment_seconds": 0.25,
        "stop": STOP_OF[verdict],
        "usage": usage_of(task, sample),
        # submit's call: failed by the environment on failed rows, answered on the others.
        "tool_calls": [["submit", "environment" if verdict == "failed" else None, 0.25]],
        # A hand-edited row that carries credentials: the viewer must drop them.
        "secrets": {"TOKEN": SECRET},
        "env_overrides": {"DB_PASSWORD": OVERRIDE},
        "messages": [
            {"role": "user", "content": f"Solve task {task}: add the numbers."},
            {
                "role": "assistant",
                "content": f"thinking about task {task}",
                "tool_calls": [
                    {
                        "id": f"c{task}_{sample}",
                        "type": "function",
                        "function": {
                            "name": "submit",
                            "arguments": json.dumps({"answer": task + sample}),
                        },
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": f"c{task}_{sample}",
                "name": "submit",
                "content": (
                    [
                        {"type": "text", "text": output},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG}},
                    ]
                    if task == 0
                    else output
                ),
            },
            {"role": "assistant", "content": f"final answer for task {task} sample {sample}"},
        ],
    }


def eval_run(directory: Path, tasks: int, samples: int) -> Path:
    """An evaluation run directory of ``tasks`` x ``samples`` rollouts."""
    directory.mkdir(parents=True, exist_ok=True)
    config = {
        "model": "tiny-test-model",
        "endpoint": "http://127.0.0.1:1/v1",
        "environment": "chanceenv",
        "adapter": "ChanceEnv",
        "adapter_version": "0.1.0",
        "tools_sha256": "ab" * 32,
        "split": "test",
        "n": samples,
        "task_indices": list(range(tasks)),
        "pass_threshold": 1.0,
    }
    (directory / "run.json").write_text(json.dumps(config))
    with (directory / "results.jsonl").open("w") as fh:
        for t in range(tasks):
            for s in range(samples):
                fh.write(json.dumps(eval_row(t, s, long_text=(t, s) == (1, 0))) + "\n")
    return directory


def trajectory_file(
    path: Path, steps: int, tasks: int, per_task: int, reward: float | None = None
) -> Path:
    """Trajectory lines of a training run: ``per_task`` rollouts of each task per step,
    judged by ``pass_threshold`` 0.5; every scored one with ``reward`` when given."""
    with path.open("w") as fh:
        for step in range(steps):
            for t in range(tasks):
                for s in range(per_task):
                    verdict, scored, reason = verdict_of(t + step, s)
                    scored = scored if reward is None or verdict != "scored" else reward
                    fh.write(
                        json.dumps(
                            {
                                "env": "EchoEnv",
                                "split": "train",
                                "task_index": t,
                                "task_spec": False,
                                "task_chosen": False,
                                "outcome": verdict,
                                "why_unscored": reason,
                                "reward": scored,
                                "pass_threshold": 0.5,
                                "finished": verdict == "scored",
                                "reset_s": 0.01,
                                "duration_s": 0.5,
                                "started_at": 1000.0 + step * 10 + s,
                                "step": step,
                                "calls": [
                                    {
                                        "tool": "echo",
                                        "arguments": {"text": f"step {step} task {t} try {s}"},
                                        "output": f"echoed step {step} task {t} try {s}",
                                        "reward": scored,
                                        "finished": verdict == "scored",
                                        "error": "tool_raised" if verdict == "failed" else None,
                                        "seconds": 0.02,
                                    }
                                ],
                            }
                        )
                        + "\n"
                    )
    return path

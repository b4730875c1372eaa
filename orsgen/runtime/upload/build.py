"""A settled rollout's upload record (what it holds: docs/viewing.md, "Rollouts in OpenReward's
runs UI"): the conversation TRL handed ``outcome_reward``, or, without one (a ``get_reward()``
scored rollout), the prompt and each tool call with its result. No secret, ``env_overrides``
value or API key is part of it; the key authenticates the requests as the SDK's header.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

from orsgen.jsonobject import as_array, is_object
from orsgen.runtime.records import trainer_facts
from orsgen.runtime.transport.identity import identity
from orsgen.runtime.upload.record import Record, UploadRun
from orsgen.runtime.upload.uploader import trl_version, uploader

# The conversation a reward function saw, per rollout, until the rollout settles.
_transcripts: weakref.WeakKeyDictionary[object, list[Any]] = weakref.WeakKeyDictionary()
_transcripts_lock = threading.Lock()


def _as_messages(value: Any, role: str) -> list[Any]:
    if isinstance(value, str):
        return [{"role": role, "content": value}]
    return [m for m in as_array(value) if is_object(m)]


def note_transcripts(
    rollouts: Sequence[object | None], prompts: Sequence[Any] | None, completions: Sequence[Any]
) -> None:
    """Keep each uploading rollout's conversation as TRL handed it, for its upload."""
    for number, (rollout, completion) in enumerate(zip(rollouts, completions)):
        if rollout is None or getattr(getattr(rollout, "settings", None), "upload", None) is None:
            continue
        prompt = prompts[number] if prompts is not None and number < len(prompts) else None
        messages = _as_messages(prompt, "user") + _as_messages(completion, "assistant")
        with _transcripts_lock:
            _transcripts[rollout] = messages


def _from_episode(rollout: Any) -> list[Any]:
    """The conversation as the environment saw it: the prompt, then each call and its result."""
    messages: list[Any] = []
    for number, call in enumerate(rollout.episode.calls):
        call_id = f"call_{number}"
        arguments = json.dumps(call.arguments, sort_keys=True, default=repr)
        function = {"name": call.tool, "arguments": arguments}
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": call_id, "function": function}],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": call.output})
    return messages


def ended(rollout: Any, run: UploadRun) -> None:
    """Queue the upload of ``rollout``, once, if it opened a task (builds a record: no I/O)."""
    episode = rollout.episode
    if episode.uploaded or not episode.opened:
        return
    episode.uploaded = True
    outcome = rollout.outcome()
    with _transcripts_lock:
        messages = _transcripts.pop(rollout, None)
    if messages is None:
        messages = _from_episode(rollout)
    if not any(is_object(m) and m.get("role") == "user" for m in messages):
        messages = _as_messages(episode.prompt, "user") + messages
    endpoint, owner = rollout.here.endpoint, rollout.owner
    catalog = getattr(owner, "DEPLOYMENT", None) or endpoint.deployment
    api_url = run.api_url or os.environ.get("OPENREWARD_API_URL")
    if api_url is None and endpoint.deployment:
        api_url = endpoint.api_url
    up = uploader()
    if up.trainer is None:
        frame = sys._getframe(1)  # pyright: ignore[reportPrivateUsage]
        up.trainer = trainer_run_info(trainer_facts.trainer(frame))
    metadata = {
        "verdict": outcome.kind,
        "reason": outcome.reason,
        "adapter": rollout.env,
        "task_chosen": episode.chosen,
        "source": "orsgen",
    }
    who = identity()
    if who.world_size > 1:  # torchrun, accelerate: which training process uploaded it
        metadata.update(rank=who.rank, world_size=who.world_size)
    seconds = time.time() - episode.started_at
    up.submit(
        Record(
            run=run,
            environment=catalog or endpoint.env_name or getattr(owner, "ENV_NAME", None),
            split=rollout.split,
            task_index=episode.task_index,
            task_spec=episode.spec,
            messages=messages,
            reward=outcome.reward,
            finished=outcome.finished,
            metadata=metadata,
            step=trainer_facts.current_step(),
            duration_ms=int(seconds * 1000),
            api_key=endpoint.api_key,
            api_url=api_url,
        )
    )


def trainer_run_info(trainer: Any) -> dict[str, Any]:
    """``RunInfo`` fields from a TRL trainer (``{}`` without one), with ``trl`` and its version."""
    out: dict[str, Any] = {"framework": "trl", "framework_version": trl_version()}
    if trainer is None:
        worker = trainer_facts.worker_model()  # AsyncGRPO's rollout child
        if worker is not None:
            out.update(model_name=worker, training_stage="rl", rl_algorithm="async_grpo")
    else:
        args, model = getattr(trainer, "args", None), getattr(trainer, "model", None)
        config = getattr(model, "config", None)
        name = getattr(model, "name_or_path", None) or getattr(config, "name_or_path", None)
        lr = getattr(args, "learning_rate", None)
        out.update(
            model_name=name if isinstance(name, str) and name else None,
            training_stage="rl",
            rl_algorithm=type(trainer).__name__.removesuffix("Trainer").lower() or None,
            lr=float(lr) if isinstance(lr, (int, float)) and not isinstance(lr, bool) else None,
            batch_size=_integer(getattr(args, "per_device_train_batch_size", None)),
            initial_step=_integer(getattr(getattr(trainer, "state", None), "global_step", None)),
        )
    return {k: v for k, v in out.items() if v is not None}


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None

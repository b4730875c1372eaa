"""What an upload is made of (:mod:`orsgen.runtime.upload.uploader` sends it): the
:class:`UploadRun` setting, one settled rollout's :class:`Record`, and :func:`events`, the
upload events of its messages (every tool call of a message, where the SDK's
``log_openai_completions`` keeps only the first)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orsgen.jsonobject import as_array, as_object, is_array, is_object


@dataclass(frozen=True)
class UploadRun:
    """Where and as what rollouts are uploaded. ``run_name`` groups them in the runs UI;
    ``model_name`` and ``training_stage`` (``"pretrained"``, ``"sft"``, ``"rl"``) default to
    what the trainer driving the process says (``"rl"`` under a trainer); ``run_info``
    adds or overrides ``RunInfo`` fields; ``api_url`` defaults to ``OPENREWARD_API_URL``
    (then the platform's API for a catalog environment, then the SDK's default)."""

    run_name: str
    model_name: str | None = None
    training_stage: str | None = None
    run_info: Mapping[str, Any] = field(default_factory=lambda: {})
    api_url: str | None = None

    @staticmethod
    def of(value: object) -> UploadRun | None:
        """The setting ``upload_run=`` names (a run name or an :class:`UploadRun`)."""
        if value is None or isinstance(value, UploadRun):
            return value
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"upload_run must be a run name or an UploadRun, got {value!r}")
        return UploadRun(value)


@dataclass(frozen=True)
class Record:

    run: UploadRun
    environment: str | None
    split: str
    task_index: int | None
    task_spec: Mapping[str, Any] | None
    messages: Sequence[Mapping[str, Any]]
    reward: float | None
    finished: bool
    metadata: Mapping[str, Any]
    step: int | None
    duration_ms: int | None
    api_key: str = field(default="", repr=False)
    api_url: str | None = None


def _text(content: Any) -> str:
    """A message's content as text (image parts named, not sent)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if is_array(content):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif is_object(part) and "text" in part:
                parts.append(str(part["text"]))
            else:
                parts.append("[image]")
        return "\n".join(parts)
    return str(content)


def events(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, dict[str, str]]]:
    """Every upload event of OpenAI-style ``messages``, in order: each message's text and
    *each* of its tool calls (the SDK's ``log_openai_completions`` keeps only the first)."""
    out: list[tuple[str, dict[str, str]]] = []
    for number, message in enumerate(messages):
        role = message.get("role")
        text = _text(message.get("content"))
        if role == "tool":
            call_id = str(message.get("tool_call_id") or f"call_{number}")
            out.append(("tool_result", {"content": text, "call_id": call_id}))
            continue
        if role in ("user", "system", "assistant") and text.strip():
            out.append((f"{role}_message", {"content": text}))
        for call in as_array(message.get("tool_calls")):
            function = as_object(as_object(call).get("function"))
            arguments: Any = function.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments or {}, sort_keys=True, default=repr)
            name = str(function.get("name") or "?")
            call_id = str(as_object(call).get("id") or f"call_{number}")
            out.append(
                ("tool_call", {"name": name, "content": arguments or "{}", "call_id": call_id})
            )
    return out

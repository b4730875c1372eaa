"""One rollout as TRL's GRPOTrainer runs it (trl 1.16), the model behind an
OpenAI-compatible endpoint; what the model sees is what it sees in training:

- the tools are the adapter's public functions, collected on the class exactly as the
  trainer does, each described by ``transformers.utils.get_json_schema`` (its ``"return"``
  entry included);
- the prompt is ``reset()``'s text as the one user message (TRL appends it to the row's
  empty user message);
- a tool's result goes back as ``str(result)`` (a content list as it is), a failed call as
  ``str({"error": ...})``, as the trainer's tool loop builds them.

The loop stops on an assistant turn with no tool call, a finished episode, ``max_turns``
assistant turns, ``max_rollout_tokens`` passed or the rollout deadline; the row's ``stop``
says which (:func:`stop_of`). The reward then comes from the runtime's own reward path
(``outcome_reward``: a terminal tool grades the final message, as in training).
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import io
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from orsgen.eval.config import EvalConfig
from orsgen.eval.endpoints import Endpoints, RequestFailed
from orsgen.jsonobject import as_array, is_array, is_object
from orsgen.runtime.records.tools import UNKNOWN, tool_calls
from orsgen.runtime.errors import ToolCallFailure, describe
from orsgen.runtime.records.episode import Kind, Outcome
from orsgen.runtime.records.episode import tool_names
from orsgen.runtime.rewards import final_message, outcome_reward
from orsgen.wording import cut

# Characters kept in results.jsonl of each kind of text; the assistant's own messages,
# which the environment grades (a terminal tool, a group judge), are never cut.
MAX_PROMPT_TEXT = 8000  # the prompt (reset()'s text)
MAX_TOOL_OUTPUT = 2000  # each tool output
MAX_TOOL_ARGUMENTS = 2000  # each tool call's arguments (the JSON text)
# The adapter's failure reasons of a call that does not fit the tool (invalid_tool_calls).
INVALID_CALLS = frozenset({"invalid_arguments", "unknown_tool"})


def trl_tools(env: object) -> dict[str, Callable[..., Any]]:
    """The adapter's tools as ``GRPOTrainer`` collects them: public functions of the class
    (properties and classmethods excluded), except ``reset`` and ``get_reward``."""
    return {name: getattr(env, name) for name in tool_names(type(env))}


def tool_schemas(tools: dict[str, Callable[..., Any]]) -> list[dict[str, Any]]:
    """What ``apply_chat_template(tools=[methods])`` renders for each tool."""
    # transformers' own annotation of it is partly unknown to strict checkers.
    templates: Any = importlib.import_module("transformers.utils.chat_template_utils")
    schema_of: Callable[[Callable[..., Any]], dict[str, Any]] = templates.get_json_schema
    return [schema_of(method) for method in tools.values()]


@dataclass
class Rollout:
    """One (task, sample): its verdict, and the trajectory for results.jsonl."""

    reward: float | None = None
    verdict: Kind = "failed"
    reason: str | None = None
    calls: int = 0
    turns: int = 0
    seconds: float = 0.0
    endpoint_seconds: float = 0.0
    environment_seconds: float = 0.0
    messages: list[dict[str, Any]] = field(default_factory=list)
    final_answer: str | None = None  # the last plain assistant message, for a group judge
    # Each tool call as [tool, failed by ("environment", "model") or None, seconds]
    # (orsgen.runtime.records.tools): the adapter's, then those that never reached it.
    tool_calls: list[list[Any]] = field(default_factory=list)
    # The endpoint's tokens summed over the turns; both None once a turn's answer lacks them.
    usage: dict[str, int | None] = field(
        default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0}
    )
    stop: str = "error"  # why it ended (orsgen.rundir.STOPS)
    invalid_tool_calls: int = 0  # unknown tool, arguments not a JSON object or not fitting
    cost: float | None = None  # usage at the config's price
    # Each call the adapter sent and its result, whole (Call.replayable): orsgen replay's input.
    env_calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Opened:
    """A reset's outcome: the prompt, or why there is none (``failure``), and its seconds."""

    prompt: Any
    failure: str | None
    seconds: float


def _text(content: Any, limit: int | None) -> Any:
    """A message's content for results.jsonl: text cut at ``limit``, images only named."""
    if isinstance(content, str):
        return cut(content, limit)
    if is_array(content):
        return [
            _text(p.get("text", ""), limit) if is_object(p) and "text" in p else "(image)"
            for p in content
        ]
    return str(content)


def whole_prompt(prompt: Any) -> Any:
    """A task's prompt as prompts.jsonl keeps it, whole: a text as it is, a content list as
    its parts, text parts whole and images only named (``{"type": "image"}``)."""
    if not is_array(prompt):
        return str(prompt)
    parts: list[dict[str, Any]] = []
    for part in prompt:
        if is_object(part) and part.get("type") == "image" and "image" in part:
            parts.append({"type": "image"})
        else:
            text = part["text"] if is_object(part) and "text" in part else part
            parts.append({"type": "text", "text": str(text)})
    return parts


_LIMITS = {"user": MAX_PROMPT_TEXT, "tool": MAX_TOOL_OUTPUT, "assistant": None}


def stored(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` as results.jsonl keeps it: each kind of text within its own limit, and
    ``"truncated": true`` beside the cut mark when one was cut (readers read the flag)."""
    limit, content = _LIMITS.get(message["role"]), message.get("content")
    parts = [content] if isinstance(content, str) else as_array(content)
    parts = [p.get("text") if is_object(p) else p for p in parts]
    longer = [len(t) > limit for t in parts if isinstance(t, str) and limit is not None]
    out = {**message, "content": _text(content, limit)}
    calls: list[dict[str, Any]] = []
    for call in as_array(message.get("tool_calls")):
        arguments = call["function"]["arguments"] or ""
        longer.append(len(arguments) > MAX_TOOL_ARGUMENTS)
        function = {**call["function"], "arguments": cut(arguments, MAX_TOOL_ARGUMENTS)}
        calls.append({**call, "function": function})
    if calls:
        out["tool_calls"] = calls
    if any(longer):
        out["truncated"] = True
    return out


def _tool_content(result: Any) -> Any:
    """TRL's ``content = result if isinstance(result, list) else str(result)``, with PIL
    images in a content list sent as data URLs (what an OpenAI-compatible server takes)."""
    if not is_array(result):
        return str(result)
    parts: list[dict[str, Any]] = []
    for part in result:
        if is_object(part) and part.get("type") == "image" and "image" in part:
            buffer = io.BytesIO()
            image: Any = part["image"]  # a PIL.Image.Image
            image.save(buffer, format="PNG")
            url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            text = part["text"] if is_object(part) and "text" in part else part
            parts.append({"type": "text", "text": str(text)})
    return parts


def request_seed(seed: int | None, task_index: int, sample: int, turn: int) -> int | None:
    """The ``seed`` of one request: one per (task, sample, turn), derived from ``--seed``. One
    seed for every request would make a server that reseeds per request (``transformers
    serve``) give the same answer to every sample of a task, so pass@k would be pass@1."""
    if seed is None:
        return None
    digest = hashlib.sha256(f"{seed}:{task_index}:{sample}:{turn}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1  # a non-negative 31-bit int


def _add_usage(total: dict[str, int | None], usage: Any) -> int:
    """Add an answer's ``usage`` to a rollout's ``total``: both fields become ``None`` for
    good when the answer carries none. Returns the answer's tokens (0 when unknown)."""
    prompt = getattr(usage, "prompt_tokens", None)
    completion = getattr(usage, "completion_tokens", None)
    if prompt is None or completion is None:
        total["prompt_tokens"] = total["completion_tokens"] = None
        return 0
    before, after = total["prompt_tokens"], total["completion_tokens"]
    if before is not None and after is not None:
        total["prompt_tokens"], total["completion_tokens"] = before + prompt, after + completion
    return int(prompt) + int(completion)


def stop_of(stop: str, verdict: Kind, outcome: Outcome) -> str:
    """A row's ``stop``: ``error`` for a failed rollout, ``timeout`` when the adapter's own
    deadline passed, ``finished`` when a terminal tool graded the final answer and ended the
    episode; else why the loop stopped (a cut answer stays ``length``)."""
    if verdict == "failed":
        return "error"
    if outcome.stop == "timeout":
        return "timeout"
    return "finished" if stop == "no_tool_call" and outcome.stop == "finished" else stop


class Conversation:
    """Runs rollouts of one adapter against the run's endpoints."""

    def __init__(self, endpoints: Endpoints, config: EvalConfig, deadline: float | None):
        """``deadline``: seconds from a rollout's reset, or none."""
        self.endpoints, self.config, self.deadline = endpoints, config, deadline
        # What an unfinished row's reason says of the limit that ended it.
        self._said = {
            "max_turns": f"max turns ({config.max_turns}) reached",
            "timeout": f"rollout deadline ({deadline or 0:g} s) passed",
            "token_limit": f"token limit ({config.max_rollout_tokens}) passed",
            "length": "the endpoint cut the answer (finish_reason length)",
        }
        # The tools' names and JSON schemas of each adapter class, made once: they depend
        # on the class's methods only, and inspect.getmembers and get_json_schema's docstring
        # parsing cost most of a millisecond a rollout otherwise.
        self._tools: dict[type, tuple[list[str], list[dict[str, Any]]]] = {}

    def tools(self, env: object) -> tuple[dict[str, Callable[..., Any]], list[dict[str, Any]]]:
        """``trl_tools(env)`` and their ``tool_schemas``, found once per adapter class."""
        kind: type = env.__class__
        if kind not in self._tools:
            tools = trl_tools(env)
            self._tools[kind] = (list(tools), tool_schemas(tools))
        names, schemas = self._tools[kind]
        return {name: getattr(env, name) for name in names}, schemas

    @staticmethod
    def open(env: Any, task_index: int, split: str) -> Opened:
        """``env.reset`` of the task: its prompt, or why it failed, and its seconds."""
        began, prompt, failure = time.monotonic(), None, None
        try:
            prompt = env.reset(task_index=task_index, split=split)
        except Exception as exc:  # noqa: BLE001 - every failure is a verdict, not a crash
            failure = f"environment: reset failed: {describe(exc)}"
        return Opened(prompt, failure, time.monotonic() - began)

    def run(
        self, env: Any, task_index: int, split: str, sample: int = 0, opened: Opened | None = None
    ) -> Rollout:
        """The rollout of (``task_index``, ``sample``) on ``env``, opened here or already
        (``opened``); its seconds count the open's own, not a wait after it."""
        if opened is None:
            opened = self.open(env, task_index, split)
        out = Rollout(reason=opened.failure)
        started = time.monotonic() - opened.seconds
        out.seconds = out.environment_seconds = opened.seconds
        if opened.failure is not None:
            out.cost = self.config.cost(out.usage)
            return out
        tools, schemas = self.tools(env)
        # The prompt as a tool's result: a text as it is, a content list with its images.
        messages = [{"role": "user", "content": _tool_content(opened.prompt)}]
        stop, endpoint_failure = self._loop(
            env, tools, schemas, messages, out, started, (task_index, sample)
        )
        if endpoint_failure is None:
            outcome_reward([env], [messages[1:]])
            out.final_answer = final_message(messages[1:])
        outcome = env.rollout.outcome()
        out.reward, out.verdict, out.reason = outcome.reward, outcome.kind, outcome.reason
        said = self._said.get(stop)
        if endpoint_failure is not None:
            out.reward, out.verdict, out.reason = None, "failed", endpoint_failure
        elif out.verdict == "unfinished" and said is not None:
            out.reason = said if out.reason is None else f"{said}; {out.reason}"
        out.stop = stop_of(stop, out.verdict, outcome)
        out.messages = [stored(m) for m in messages]
        calls = env.rollout.calls
        out.invalid_tool_calls += sum(1 for c in calls if c.failure in INVALID_CALLS)
        out.tool_calls = [*tool_calls(env.__class__, calls), *out.tool_calls]
        out.cost = self.config.cost(out.usage)
        out.env_calls = [c.replayable() for c in calls if c.sent]
        out.seconds = time.monotonic() - started
        return out

    def _loop(
        self,
        env: Any,
        tools: dict[str, Callable[..., Any]],
        schemas: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        out: Rollout,
        started: float,
        where: tuple[int, int],
    ) -> tuple[str, str | None]:
        """Turns until a stop; (why it stopped, of ``STOPS``; the endpoint failure)."""
        spent, most = 0, self.config.max_rollout_tokens
        while True:
            if getattr(env, "finished", False):
                return "finished", None
            if most is not None and spent > most:
                return "token_limit", None
            if out.turns >= self.config.max_turns:
                return "max_turns", None
            limit = self.deadline
            if limit is not None and time.monotonic() - started >= limit:
                return "timeout", None
            c, asked = self.config, time.monotonic()
            seed = request_seed(c.seed, *where, out.turns)
            # The body goes as JSON as it is: chat.completions.create would first walk every
            # message against its typed schema, several ms a request at 16 messages.
            body: dict[str, Any] = dict(model=c.model, messages=messages, seed=seed)
            body |= dict(tools=schemas or None, temperature=c.temperature, max_tokens=c.max_tokens)
            until = None if limit is None else started + limit  # the request's budget
            try:
                response = self.endpoints.post(
                    {k: v for k, v in body.items() if v is not None}, where[0], until
                )
            except RequestFailed as exc:  # the endpoints' outages are routed around
                return "error", str(exc)
            finally:
                out.endpoint_seconds += time.monotonic() - asked
            out.turns += 1
            spent += _add_usage(out.usage, response.usage)
            choice = response.choices[0]
            message = choice.message
            calls = list(message.tool_calls or [])
            assistant: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
            if calls:
                assistant["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in calls
                ]
            messages.append(assistant)
            if not calls:
                return "length" if choice.finish_reason == "length" else "no_tool_call", None
            for call in calls:
                out.calls += 1
                began, name = time.monotonic(), call.function.name
                result, reached = self._call(tools, name, call.function.arguments)
                seconds = time.monotonic() - began
                out.environment_seconds += seconds
                if not reached:  # the model's mistake, which the adapter never saw
                    out.tool_calls.append([name if name in tools else UNKNOWN, "model", seconds])
                    out.invalid_tool_calls += 1
                said = {"role": "tool", "tool_call_id": call.id, "name": name}
                messages.append({**said, "content": _tool_content(result)})

    @staticmethod
    def _call(
        tools: dict[str, Callable[..., Any]], name: str, arguments: str | None
    ) -> tuple[Any, bool]:
        """The tool's result, or TRL's ``{"error": str(e)}`` for a call that raised; and
        whether it reached the adapter, which records it (a wrong name or arguments do not)."""
        try:
            if name not in tools:
                raise ValueError(f"Tool {name} not found.")
            given = json.loads(arguments or "{}")
            if not is_object(given):
                raise ValueError(f"tool arguments must be a JSON object, got {arguments!r}")
            return tools[name](**given), True
        except ToolCallFailure as exc:  # recorded by the adapter's rollout
            return {"error": str(exc)}, True
        except Exception as exc:  # noqa: BLE001 - the model sees the error, as in training
            return {"error": str(exc)}, False

"""``orsgen export RUN --format inspect|parquet -o FILE``: a run, read through
:func:`~orsgen.runlog.open_run`, as an Inspect log (``.eval``, written by ``inspect_ai``'s
own types and writer: the ``export`` extra) or as Parquet (one row per rollout, the record's
flat fields, messages and calls as nested columns; ``pyarrow``, which ``datasets`` brings)."""

from __future__ import annotations

import datetime
import importlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from orsgen.runlog.open import Run
from orsgen.runlog.record import JSON, Rollout, RunError

FORMATS = ("inspect", "parquet")
# A stop as Inspect records a limit (EvalSampleLimit.type); the other unfinished stops are errors.
_LIMITS = {"max_turns": "message", "token_limit": "token", "length": "token", "timeout": "time"}
_METADATA = ("task_index", "split", "sample", "step", "verdict", "stop", "cost")
_CALL = ("tool", "arguments", "text", "reward", "finished", "error", "truncated")  # Parquet


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        extra = "orsgen[export]" if name.startswith("inspect_ai") else "pyarrow"
        raise RunError(f"--format needs {name}: pip install {extra}") from None


def flat(rollout: Rollout) -> dict[str, object]:
    """A rollout as one Parquet row: its fields, usage flat, messages and calls as JSON text
    in nested lists (a column of mixed JSON has no one Arrow type)."""
    row: dict[str, object] = {
        k: v
        for k, v in asdict(rollout).items()
        if k not in ("usage", "env_calls", "messages", "tool_calls")
    }
    row["prompt_tokens"] = rollout.usage.prompt_tokens
    row["completion_tokens"] = rollout.usage.completion_tokens
    row["truncated"] = rollout.truncated
    row["messages"] = [json.dumps(m, sort_keys=True) for m in rollout.messages]
    row["tool_calls"] = [json.dumps(c) for c in rollout.tool_calls]
    row["env_calls"] = [
        {**{k: getattr(c, k) for k in _CALL}, "arguments": json.dumps(c.arguments, sort_keys=True)}
        for c in rollout.env_calls
    ]
    return row


def to_parquet(run: Run, out: Path) -> int:
    pa = _module("pyarrow")
    pq = _module("pyarrow.parquet")
    rows = [flat(r) for r in run.rows()]
    text, yes = pa.string(), pa.bool_()
    call = pa.struct(list(zip(_CALL, (text, text, text, pa.float64(), yes, text, yes))))
    texts = pa.list_(text)
    types = {"messages": texts, "tool_calls": texts, "env_calls": pa.list_(call)}
    names = list(flat(Rollout("eval", 0, "", "", "scored", None, None, None, False)))
    fields = [(n, types.get(n)) for n in names]
    columns = {n: [r[n] for r in rows] for n in names}
    table = pa.table({n: pa.array(columns[n], type=t) for n, t in fields})
    pq.write_table(table, out)
    return len(rows)


def _content(value: JSON) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: their text
        return "".join(str(p.get("text", "")) for p in value if isinstance(p, dict))
    return "" if value is None else json.dumps(value)


def _items(value: JSON) -> list[dict[str, JSON]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _tool_call(tool_mod: Any, call: dict[str, JSON]) -> Any:
    fn = call.get("function")
    fn = fn if isinstance(fn, dict) else {}
    text = fn.get("arguments")
    try:
        arguments: JSON = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        arguments = {"_raw": text}
    return tool_mod.ToolCall(
        id=str(call.get("id")),
        function=str(fn.get("name")),
        arguments=arguments if isinstance(arguments, dict) else {"_": arguments},
        type="function",
    )


def _messages(model: Any, messages: list[dict[str, JSON]]) -> list[Any]:
    tool_mod = _module("inspect_ai.tool")
    made: list[Any] = []
    for m in messages:
        role, content = m.get("role"), _content(m.get("content"))
        if role in ("system", "user"):
            kind = model.ChatMessageSystem if role == "system" else model.ChatMessageUser
            made.append(kind(content=content))
        elif role == "assistant":
            calls = [_tool_call(tool_mod, c) for c in _items(m.get("tool_calls"))]
            made.append(model.ChatMessageAssistant(content=content, tool_calls=calls or None))
        elif role == "tool":
            made.append(
                model.ChatMessageTool(
                    content=content,
                    tool_call_id=str(m.get("tool_call_id")),
                    function=str(m.get("name")),
                )
            )
    return made


def to_inspect(run: Run, out: Path) -> int:
    log_mod = _module("inspect_ai.log")
    model = _module("inspect_ai.model")
    scorer = _module("inspect_ai.scorer")
    name = run.spec.model or run.spec.environment or "orsgen"
    samples: list[Any] = []
    rollouts = list(run.rows())
    for number, r in enumerate(rollouts):
        messages = _messages(model, r.messages)
        usage = None
        if r.usage.total_tokens is not None:
            usage = model.ModelUsage(
                input_tokens=r.usage.prompt_tokens or 0,
                output_tokens=r.usage.completion_tokens or 0,
                total_tokens=r.usage.total_tokens,
            )
        kind = _LIMITS.get(r.stop or "")
        limit = None if kind is None else log_mod.EvalSampleLimit(type=kind, limit=r.limit or 0)
        error = None
        if r.stop == "error" or r.verdict == "failed":
            error = log_mod.EvalError(
                message=r.reason or str(r.stop), traceback="", traceback_ansi=""
            )
        first_user = next((m for m in r.messages if m.get("role") == "user"), None)
        samples.append(
            log_mod.EvalSample(
                id=f"task{r.task_index}" if r.sample is not None else f"row{number}",
                epoch=(r.sample or 0) + 1,
                input=_content(first_user.get("content")) if first_user else "",
                target="",
                messages=messages,
                output=model.ModelOutput(model=name, usage=usage),
                scores={
                    "reward": scorer.Score(
                        value=r.reward if r.reward is not None else float("nan"),
                        answer=r.verdict,
                        explanation=r.reason,
                        metadata={"verdict": r.verdict, "stop": r.stop},
                    )
                },
                metadata={"row": number, **{k: getattr(r, k) for k in _METADATA}},
                model_usage={name: usage} if usage else {},
                limit=limit,
                error=error,
            )
        )
    created = run.path.stat().st_mtime
    spec = log_mod.EvalSpec(
        task=run.spec.environment or "orsgen",
        task_id=run.spec.environment or "orsgen",
        created=datetime.datetime.fromtimestamp(created, datetime.timezone.utc).isoformat(),
        dataset=log_mod.EvalDataset(name=run.spec.split, samples=len(rollouts)),
        model=name,
        config=log_mod.EvalConfig(),
        metadata={"orsgen_kind": run.spec.kind, "orsgen_run": str(run.path)},
    )
    log = log_mod.EvalLog(
        eval=spec,
        status="success",
        samples=samples,
        stats=log_mod.EvalStats(model_usage=_total(model, rollouts, name)),
    )
    log_mod.write_eval_log(log, str(out), format="eval")
    return len(samples)


def _total(model: Any, rollouts: list[Rollout], name: str) -> dict[str, Any]:
    tokens = [r.usage for r in rollouts if r.usage.total_tokens is not None]
    prompt = sum(u.prompt_tokens or 0 for u in tokens)
    completion = sum(u.completion_tokens or 0 for u in tokens)
    total = prompt + completion
    usage = model.ModelUsage(input_tokens=prompt, output_tokens=completion, total_tokens=total)
    return {name: usage} if tokens else {}


def export(run: Run, form: str, out: Path) -> int:
    """Write ``run`` as ``form`` to ``out``; the number of rollouts written."""
    return (to_inspect if form == "inspect" else to_parquet)(run, out)

"""Today's rows into :class:`~orsgen.runlog.record.Rollout`: an eval or replay row
(results.jsonl) and a training trajectory line, each checked as it is read (a row that does
not fit is a :class:`~orsgen.runlog.record.RunError` naming its file and line)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import cast

from orsgen.runlog.record import JSON, STOP_LIMITS, EnvCall, Rollout, RunError, Source, Usage
from orsgen.runlog.record import Verdict, cut_marked

_VERDICTS: tuple[Verdict, ...] = ("scored", "unfinished", "failed")


class _Bad(Exception):
    """A field that does not fit; the reader adds the file and line."""


def _int(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(f"{key} is not an integer")
    return value


def _opt_int(value: object, key: str) -> int | None:
    return None if value is None else _int(value, key)


def _num(value: object, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Bad(f"{key} is not a number")
    return float(value)


def _str(value: object, key: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Bad(f"{key} is not a string")
    return value


def _list(value: object, key: str) -> list[JSON]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Bad(f"{key} is not a list")
    return cast(list[JSON], value)


def _dict(value: object, key: str) -> dict[str, JSON]:
    if not isinstance(value, dict):
        raise _Bad(f"{key} is not an object")
    return cast(dict[str, JSON], value)


def _verdict(value: object, key: str) -> Verdict:
    if value not in _VERDICTS:
        raise _Bad(f"{key} {value!r} is not one of {', '.join(_VERDICTS)}")
    return value


def _call(value: JSON, output: str) -> EnvCall:
    call = _dict(value, "a call")
    text = _str(call.get(output), output) or ""
    return EnvCall(
        tool=_str(call.get("tool"), "tool") or "",
        arguments=_dict(call.get("arguments") or {}, "arguments"),
        text=text,
        reward=_num(call.get("reward"), "reward"),
        finished=bool(call.get("finished")),
        error=_str(call.get("error"), "error"),
        seconds=_num(call.get("seconds"), "seconds"),
        images=_list(call.get("images"), "images"),
        truncated=bool(call.get("truncated", cut_marked(text))),
        text_sha256=_str(call.get("output_sha256"), "output_sha256"),
        sent=call.get("sent") is not False,
    )


def eval_row(row: Mapping[str, object], spec: Mapping[str, JSON], source: Source) -> Rollout:
    """An eval (or replay) row; ``spec`` is its run.json (the split and limits rows omit)."""
    stop = _str(row.get("stop"), "stop")
    usage = _dict(row.get("usage") or {}, "usage")
    limit_key = STOP_LIMITS.get(stop or "")
    split = _str(row.get("split"), "split") or _str(spec.get("split"), "split") or ""
    return Rollout(
        source=source,
        task_index=_int(row.get("task_index"), "task_index"),
        sample=_int(row.get("sample"), "sample"),
        split=split,
        environment=_str(spec.get("environment"), "environment") or "",
        verdict=_verdict(row.get("verdict"), "verdict"),
        reward=_num(row.get("reward"), "reward"),
        reason=_str(row.get("reason"), "reason"),
        stop=stop,
        finished=stop == "finished"
        or any(
            isinstance(c, dict) and c.get("finished") is True
            for c in _list(row.get("env_calls"), "env_calls")
        ),
        limit=_num(spec.get(limit_key), limit_key) if limit_key else None,
        seconds=_num(row.get("seconds"), "seconds"),
        endpoint_seconds=_num(row.get("endpoint_seconds"), "endpoint_seconds"),
        environment_seconds=_num(row.get("environment_seconds"), "environment_seconds"),
        turns=_opt_int(row.get("turns"), "turns"),
        usage=Usage(
            _opt_int(usage.get("prompt_tokens"), "prompt_tokens"),
            _opt_int(usage.get("completion_tokens"), "completion_tokens"),
            row.get("usage") is not None,
        ),
        cost=_num(row.get("cost"), "cost"),
        env_calls=[_call(c, "text") for c in _list(row.get("env_calls"), "env_calls")],
        messages=[_dict(m, "a message") for m in _list(row.get("messages"), "messages")],
        invalid_tool_calls=_opt_int(row.get("invalid_tool_calls"), "invalid_tool_calls") or 0,
        recorded_calls="env_calls" in row,
        recorded_reward=_num(row.get("recorded_reward"), "recorded_reward"),
        recorded_verdict=_str(row.get("recorded_verdict"), "recorded_verdict"),
        changed=None if row.get("changed") is None else bool(row.get("changed")),
        group_reward=_num(row.get("group_reward"), "group_reward"),
        calls=_opt_int(row.get("calls"), "calls"),
        tool_calls=_list(row.get("tool_calls"), "tool_calls"),
    )


def trajectory_line(line: Mapping[str, object]) -> Rollout:
    """A training adapter's trajectory line (``runtime/trajectories/writer.line``)."""
    return Rollout(
        source="trajectory",
        task_index=_int(line.get("task_index"), "task_index"),
        step=_opt_int(line.get("step"), "step"),
        split=_str(line.get("split"), "split") or "",
        environment=_str(line.get("env"), "env") or "",
        verdict=_verdict(line.get("outcome"), "outcome"),
        reward=_num(line.get("reward"), "reward"),
        reason=_str(line.get("why_unscored"), "why_unscored"),
        stop=_str(line.get("stop"), "stop"),
        finished=bool(line.get("finished")),
        seconds=_num(line.get("duration_s"), "duration_s"),
        environment_seconds=_num(line.get("duration_s"), "duration_s"),
        env_calls=[_call(c, "output") for c in _list(line.get("calls"), "calls")],
        pass_threshold=_num(line.get("pass_threshold"), "pass_threshold"),
        started_at=_num(line.get("started_at"), "started_at"),
        reset_s=_num(line.get("reset_s"), "reset_s"),
        task_chosen=bool(line.get("task_chosen")),
    )


def checked(path: object, where: str, make: Callable[[], Rollout]) -> Rollout:
    """``make()``, a row's parse, with its failures as a :class:`RunError` at ``where``."""
    try:
        return make()
    except (_Bad, KeyError, TypeError, ValueError) as exc:
        raise RunError(f"{path}: {where}: {exc}") from None

"""An evaluation run's records, and its resume (the files: :mod:`orsgen.rundir`)."""

from __future__ import annotations

import json
import math
from array import array
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, overload

from orsgen.eval.config import EvalConfig, EvalConfigError
from orsgen.identity import identity_differences
from orsgen.jsonobject import as_object
from orsgen.runtime.records.tools import ToolTally
from orsgen.rundir import RESULTS_FILE, RUN_FILE, STOPS, VERDICTS, RunError, cut_torn
from orsgen.rundir import located_rows, read_config, run_rows, write_whole
from orsgen.runlog.parse import checked, eval_row
from orsgen.runlog.record import Summary

Record = Summary  # what a run keeps of a rollout (runlog's slim form)


class ResumeRefused(RunError, EvalConfigError):
    """A run in ``--out`` of another identity, naming the field (``orsgen eval``: its option)."""


class Records(Sequence[Record]):
    """A run's records, kept column by column in arrays (about 80 bytes a rollout, reasons
    stored once each): 100,000 rollouts hold 8 MB. Indexing gives a :class:`Record`."""

    def __init__(self) -> None:
        self._task, self._sample = array("q"), array("q")
        self._verdict, self._has = array("b"), array("b")  # _has: bit 1 reward, bit 2 group
        self._reward, self._group, self._seconds = array("d"), array("d"), array("d")
        self._reason = array("q")  # index into _reasons, or -1
        # Tokens (-1: unknown), the stop's index in STOPS (-1: none), the cost (NaN: none).
        self._prompt, self._completion = array("q"), array("q")
        self._stop, self._invalid, self._cost = array("b"), array("q"), array("d")
        self._reasons: list[str] = []
        self._reason_index: dict[str, int] = {}
        self.tools = ToolTally()  # the rows' tool calls, per tool (summary.json's tools)

    def append(self, r: Record) -> None:
        self._task.append(r.task_index)
        self._sample.append(r.sample)
        self._verdict.append(VERDICTS.index(r.verdict) if r.verdict in VERDICTS else -1)
        self._has.append((r.reward is not None) | (r.group_reward is not None) << 1)
        self._reward.append(0.0 if r.reward is None else r.reward)
        self._group.append(0.0 if r.group_reward is None else r.group_reward)
        self._seconds.append(r.seconds)
        if r.reason is not None and r.reason not in self._reason_index:
            self._reason_index[r.reason] = len(self._reasons)
            self._reasons.append(r.reason)
        self._reason.append(-1 if r.reason is None else self._reason_index[r.reason])
        self._prompt.append(-1 if r.prompt_tokens is None else r.prompt_tokens)
        self._completion.append(-1 if r.completion_tokens is None else r.completion_tokens)
        self._stop.append(STOPS.index(r.stop) if r.stop in STOPS else -1)
        self._invalid.append(r.invalid_tool_calls)
        self._cost.append(math.nan if r.cost is None else r.cost)

    def add(self, row: Mapping[str, Any]) -> None:
        """Keep a row's slim form, and fold its tool calls into :attr:`tools`."""
        rollout = checked(RESULTS_FILE, "a row", partial(eval_row, row, {}, "eval"))
        self.append(rollout.summary())
        self.tools.add(rollout.tool_calls)

    def __len__(self) -> int:
        return len(self._task)

    @overload
    def __getitem__(self, i: int) -> Record: ...

    @overload
    def __getitem__(self, i: slice) -> list[Record]: ...

    def __getitem__(self, i: int | slice) -> Record | list[Record]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        has, verdict, reason = self._has[i], self._verdict[i], self._reason[i]
        prompt, completion = self._prompt[i], self._completion[i]
        stop, cost = self._stop[i], self._cost[i]
        return Record(
            self._task[i],
            self._sample[i],
            VERDICTS[verdict] if verdict >= 0 else "failed",
            self._reward[i] if has & 1 else None,
            self._reasons[reason] if reason >= 0 else None,
            self._seconds[i],
            self._group[i] if has & 2 else None,
            None if prompt < 0 else prompt,
            None if completion < 0 else completion,
            None if stop < 0 else STOPS[stop],
            self._invalid[i],
            None if math.isnan(cost) else cost,
        )


def read_records(path: Path, group: int | None = None) -> Records:
    """The records of results.jsonl's whole rows (a torn last line cut off the file, so its
    rollout runs again). With ``group`` (the samples a group judge judges together), the
    rows of a task with fewer are removed first, so the whole group runs again."""
    cut_torn(path)
    if group is not None:
        have = Counter(int(row["task_index"]) for _, row in run_rows(path))
        if any(count < group for count in have.values()):
            kept = [o for o, row in located_rows(path) if have[int(row["task_index"])] >= group]
            with path.open("rb") as source:

                def copy(target: Any) -> None:
                    for offset in kept:
                        source.seek(offset)
                        target.write(source.readline())

                write_whole(path, copy)
    records = Records()
    for _, row in run_rows(path):
        records.add(row)
    return records


def check_resume(out: Path, config: EvalConfig, resume: bool) -> Mapping[str, Any]:
    """Refuse to mix runs: a run in ``out`` needs ``--resume``, which continues it only with
    the same identity (:mod:`orsgen.identity`), and starts one where there is none.
    Returns the resumed run's endpoint counts."""
    if not (out / RUN_FILE).exists():  # a run that never started: --resume starts it
        if (out / RESULTS_FILE).exists():
            raise RunError(f"{out} holds {RESULTS_FILE} but no {RUN_FILE}; use another --out")
        return {}
    if not resume:
        raise RunError(f"{out} already holds a run; pass --resume to continue it")
    before, counts = run_config(out)
    for key in identity_differences(before.to_json(), config.to_json()):
        was, now = before.to_json().get(key), config.to_json().get(key)
        raise ResumeRefused(
            f"was {shortened(was)} and is now {shortened(now)}: cannot resume; use another "
            "--out for a different run",
            key,  # orsgen eval names its option
        )
    return counts


def run_config(run: Path) -> tuple[EvalConfig, Mapping[str, Any]]:
    """The config of the run in ``run`` and its run.json's endpoint counts."""
    found = read_config(run)
    try:
        return EvalConfig.from_json(found), as_object(found.get("endpoint_counts"))
    except (ValueError, TypeError) as exc:
        raise RunError(f"cannot read {run / RUN_FILE}: {exc}") from None


def shortened(value: Any, limit: int = 80) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."

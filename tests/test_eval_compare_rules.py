"""Issue 45 items 9, 10, 13 and 17 (compare): ``orsgen compare`` of summaries written
here (the statistics and the checks need no server), and a resume at new addresses.

- the paired interval agrees with the p-value: it excludes 0 exactly when p < 0.05, and with
  too few tasks for any p below 0.05 the line says so instead; a run's pass@1 interval is
  Wilson, never [0, 0] or [1, 1];
- every setting that decides pass or fail is checked: each of ``identity.COMPARED`` (the
  tasks, ``n``, ``max_turns``, ``pass_threshold``, ``unfinished_reward``...) refused unless
  ``--force``, ``max_rollout_tokens`` and ``rollout_timeout`` warned;
- a JSON file that is not a summary, or a summary with no pass@1, is one line, exit 2;
- a resume with a new ``--endpoint`` and a new environment URL continues, recording both."""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path
from typing import Any

import pytest

import openai_standin
import ors_server
from conftest import ROOT, run_eval
from orsgen.identity import COMPARED

ECHO = ROOT / "generated" / "echo"
run_compare = functools.partial(run_eval, command="compare")
SAME = {"environment": "echo", "split": "test", "tools_sha256": "x", "n": 3, "max_turns": 8}
SAME |= {"pass_threshold": 1.0, "unfinished_reward": None, "max_rollout_tokens": None}
SAME |= {"rollout_timeout": None}


def summary(rates: list[float], **config: Any) -> dict[str, Any]:
    """A summary.json of per-task pass@1 ``rates`` (what compare reads of one)."""
    per_task = [{"task_index": i, "pass_at_k": {"1": r}} for i, r in enumerate(rates)]
    return {**SAME, **config, "model": "m", "pass_at_k": {"1": sum(rates) / len(rates)},
            "per_task": per_task}  # fmt: skip


def written(tmp_path: Path, name: str, document: Any) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(document))
    return str(path)


@pytest.mark.parametrize("seed", range(6))
def test_the_interval_agrees_with_the_p_value(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    tasks = [4, 7, 12, 16, 30, 45][seed]
    a = [rng.choice([0.0, 1 / 3, 2 / 3, 1.0]) for _ in range(tasks)]
    lift = rng.choice([0.0, 1 / 3, 2 / 3])
    b = [min(1.0, x + (lift if rng.random() < 0.7 else -1 / 3)) for x in a]
    b = [max(0.0, x) for x in b]
    given = [written(tmp_path, "a", summary(a)), written(tmp_path, "b", summary(b))]
    code, out, err = run_compare([*given, "--format", "json"])
    assert code == 0, err
    pair = json.loads(out)["paired"][0]
    code, md, err = run_compare([*given])
    assert code == 0, err
    (line,) = [x for x in md.splitlines() if x.startswith("pass@1 B-A: ")]
    if tasks < 6:
        assert pair["ci95"] is None and "too few for any p below 0.05" in line, line
        return
    lo, hi = pair["ci95"]
    assert lo <= pair["pass_at_1_diff"] <= hi
    assert (lo > 0 or hi < 0) == (pair["p_value"] < 0.05), (pair, line)
    assert f"[{lo:+.3f}, {hi:+.3f}]" in line


def test_a_run_s_pass_at_1_interval_is_wilson(tmp_path: Path) -> None:
    given = [written(tmp_path, "a", summary([0.0] * 8)), written(tmp_path, "b", summary([1.0] * 8))]
    code, out, err = run_compare([*given, "--format", "json"])
    assert code == 0, err
    document = json.loads(out)
    (lo0, hi0), (lo1, hi1) = (r["pass_at_1_ci95"] for r in document["runs"])
    assert lo0 == 0.0 < hi0 < 0.5 and 0.5 < lo1 < hi1 == 1.0
    lo, hi = document["paired"][0]["ci95"]  # all 8 tasks rose: p = 2/256, 0 excluded
    assert document["paired"][0]["p_value"] < 0.05 and lo > 0


def test_every_setting_that_decides_pass_or_fail_is_checked(tmp_path: Path) -> None:
    rates = [0.0, 1.0, 1 / 3, 2 / 3]
    base = written(tmp_path, "a", summary(rates))
    same = written(tmp_path, "same", summary(rates))
    code, _, err = run_compare([base, same])
    assert code == 0 and "warning" not in err, err
    differing = {"environment": "rich", "split": "train", "tools_sha256": "y", "n": 4}
    differing |= {"max_turns": 3, "pass_threshold": 0.5, "unfinished_reward": 1.0}
    assert set(differing) == set(COMPARED)  # every field the rule names is tried
    for field, value in differing.items():
        other = written(tmp_path, field, summary([1.0] * 4, **{field: value}))
        code, out, err = run_compare([base, other])
        assert code == 2 and out == "" and err.count("\n") == 1, (field, err)
        assert f"the runs differ in {field} " in err and "--force" in err, err
    code, out, err = run_compare([base, other, "--force", "--format", "json"])
    assert code == 0 and "warning: the runs differ in unfinished_reward" in err, err
    for limit, value in (("max_rollout_tokens", 2000), ("rollout_timeout", 30.0)):
        other = written(tmp_path, limit, summary(rates, **{limit: value}))
        code, out, err = run_compare([base, other, "--format", "json"])
        assert code == 0 and err.count("\n") == 1 and f"warning: the runs differ in {limit}" in err
        assert json.loads(out)["paired"][0]["tasks"] == 4


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_a_file_that_is_not_a_summary_is_one_line(force: list[str], tmp_path: Path) -> None:
    base = written(tmp_path, "a", summary([0.0, 1.0]))
    bad = {"not": "a summary"}
    null = {**summary([0.0, 1.0]), "pass_at_k": {"1": None}}
    for name, document in (("bad", bad), ("list", [1, 2]), ("null", null)):
        code, out, err = run_compare([base, written(tmp_path, name, document), *force])
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert "Traceback" not in err and f"{name}.json" in err, err


@pytest.mark.slow  # two orsgen eval runs against servers
def test_resume_follows_the_job_not_its_address(
    echo_server: ors_server.RunningServer, tmp_path: Path
) -> None:
    standin = openai_standin.start(tmp_path, tool="echo", argument="text")
    try:
        out = tmp_path / "run"
        args = [str(ECHO), "--model", standin.model, "--split", "test", "--no-progress"]
        args += ["--out", str(out)]
        first = ["--endpoint", standin.endpoint, "--base-url", echo_server.url, "--num-tasks", "2"]
        code, _, err = run_eval(args + first)
        assert code == 0, err
        run = json.loads((out / "run.json").read_text())
        assert run["environment_url"] == echo_server.url.rstrip("/")
        # The same servers at new addresses, as a requeued job finds them.
        moved = [u.replace("127.0.0.1", "localhost") for u in (standin.endpoint, echo_server.url)]
        again = ["--endpoint", moved[0], "--base-url", moved[1], "--num-tasks", "2", "--resume"]
        code, _, err = run_eval(args + again)
        assert code == 0, err
        run = json.loads((out / "run.json").read_text())
        assert run["endpoint"] == moved[0] and run["environment_url"] == moved[1].rstrip("/")
        code, _, err = run_eval(args + again[:-3] + ["--num-tasks", "3", "--resume"])
        assert code == 2 and "cannot resume" in err, err  # the task list is the run's
    finally:
        standin.stop()

"""``orsgen eval`` end to end: a real ORS server (tests/envs/chance_env.py) and a real
OpenAI-compatible server (``transformers serve`` of the tiny local model, warmed up on
exactly the tool JSON of the generated adapter). Nothing is mocked. Expected figures come
from the environment's task list (its success probabilities), not from orsgen's output.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

import ors_server
from conftest import ROOT, trl_tools
from conftest import eval_process as _cli
from conftest import eval_args as _base
from conftest import results_rows as _rows
from conftest import run_eval as run_cli
from chance_model import SPLITS
from serve_model import start_model_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _pairs(rows: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return sorted((r["task_index"], r["sample"]) for r in rows)


def test_the_model_sees_trls_tools(chance_pkg, chance_server) -> None:
    from transformers.utils.chat_template_utils import get_json_schema

    from orsgen.eval.conversation import tool_schemas
    from orsgen.eval.conversation import trl_tools as eval_tools

    env = chance_pkg.ChanceEnv(base_url=chance_server.url)
    tools = eval_tools(env)
    assert set(tools) == trl_tools(chance_pkg.ChanceEnv)  # what GRPOTrainer collects
    schemas = tool_schemas(tools)
    assert schemas == [get_json_schema(env.say)]


def test_known_probabilities_give_pass_at_k(
    chance_pkg, chance_server, model_server, tmp_path
) -> None:
    from orsgen.eval import EvalConfig, evaluate

    n = 24
    tasks = SPLITS["test"]
    result = evaluate(
        chance_pkg.ChanceEnv,
        EvalConfig(endpoint=model_server.endpoint, model=model_server.model, split="test", n=n),
        adapter={"base_url": chance_server.url},
        concurrency=4,
        out=tmp_path / "run",
        progress=False,
    )
    assert result.coverage == 1.0, [r["reason"] for r in result.rows if r["verdict"] != "scored"]
    assert _pairs(result.rows) == [(i, s) for i in range(len(tasks)) for s in range(n)]
    for task, figures in zip(tasks, result.summary["per_task"]):
        p = task["p"]
        tolerance = 4 * math.sqrt(p * (1 - p) / n)  # 4 standard errors of a pass rate
        assert set(figures["pass_at_k"]) == {str(k) for k in range(1, n + 1)}
        for k in (1, 2, 4, 8):
            expected = 1 - (1 - p) ** k
            assert abs(figures["pass_at_k"][str(k)] - expected) <= k * tolerance + 1e-9, (
                task,
                k,
            )
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["pass_at_k"]["1"] == pytest.approx(
        sum(t["pass_at_k"]["1"] for t in summary["per_task"]) / len(tasks)
    )
    assert summary["split"] == "test" and summary["n"] == n
    assert summary["tools_sha256"] == chance_pkg.ChanceEnv.TOOLS_SHA256
    report = (tmp_path / "run" / "report.md").read_text()
    assert "pass_rate.png" in report and (tmp_path / "run" / "pass_rate.png").stat().st_size
    assert (tmp_path / "run" / "rewards.png").stat().st_size


def test_unfinished_rollouts_take_the_unfinished_reward(
    chance_dir, chance_server, model_server, tmp_path
) -> None:
    out = tmp_path / "open"
    args = _base(chance_dir, chance_server, model_server)
    args += ["--split", "open", "-n", "2", "--unfinished-reward", "0.25", "--out", str(out)]
    code, stdout, stderr = run_cli(args + ["--min-coverage", "0.5"])
    assert code == 1, stderr  # nothing scored: coverage 0 < 0.5
    assert "below --min-coverage" in stderr.strip().splitlines()[-1]
    rows = _rows(out)
    assert {r["verdict"] for r in rows} == {"unfinished"}
    assert {r["reward"] for r in rows} == {0.25}
    assert all(r["reason"] for r in rows)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["coverage"] == 0.0 and summary["mean_reward"] is None
    assert summary["mean_reward_all"] == 0.25 and summary["pass_at_k"]["1"] == 0.0


def test_sigkill_then_resume_runs_each_pair_once(
    chance_dir, chance_server, model_server, tmp_path
) -> None:
    out = tmp_path / "killed"
    secret = "eval-secret-value-31337"
    args = _base(chance_dir, chance_server, model_server)
    args += [
        "--split",
        "slow",
        "-n",
        "3",
        "--out",
        str(out),
        "--endpoint-api-key",
        secret,
        "--api-key",
        secret + "-ors",
        "--secret",
        f"TOKEN={secret}-session",
    ]
    total = len(SPLITS["slow"]) * 3
    proc = _cli(args)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            results = out / "results.jsonl"
            if results.exists() and len(results.read_bytes().splitlines()) >= 4:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()[1]
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)
    before = (out / "results.jsonl").read_bytes()
    complete = before[: before.rfind(b"\n") + 1]
    kept = complete.splitlines()
    assert 4 <= len(kept) < total
    # What a kill in the middle of a write leaves: half a row.
    with (out / "results.jsonl").open("ab") as fh:
        fh.write(b'{"task_index": 3, "sample": 2, "verd')
    code, stdout, stderr = run_cli(args + ["--resume"])
    assert code == 0, stderr
    after = (out / "results.jsonl").read_bytes()
    assert after.startswith(complete)  # rows written before the kill, byte for byte
    rows = _rows(out)
    assert _pairs(rows) == [(i, s) for i in range(len(SPLITS["slow"])) for s in range(3)]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rollouts"] == total and summary["expected_rollouts"] == total
    for path in out.iterdir():
        assert secret not in path.read_bytes().decode("utf-8", "replace"), path.name
    # A changed configuration is refused, naming the difference.
    code, _, stderr = run_cli(args + ["--resume", "-n", "4"])
    assert code == 2
    assert (
        stderr.strip()
        .splitlines()[-1]
        .startswith("orsgen eval: error: -n/--samples was 3 and is now 4: cannot resume")
    )
    code, _, stderr = run_cli(args + ["--resume", "--model", "other-model"])
    assert code == 2 and "model was" in stderr
    code, _, stderr = run_cli(args)  # the same directory without --resume
    assert code == 2 and "--resume" in stderr
    assert (out / "results.jsonl").read_bytes() == after


def test_endpoint_stopped_mid_run(chance_pkg, chance_server, tiny_model, tmp_path) -> None:
    """A lone endpoint stopped mid-run fails no rollout: the run waits for it, stops once it
    has been down for the limit (the rows so far kept), and a resumed run against it, back
    on the same port, completes the run."""
    from orsgen.eval import EndpointsDown, EvalConfig, evaluate

    own = start_model_server(tiny_model, tmp_path)
    out = tmp_path / "outage"
    config = EvalConfig(endpoint=own.endpoint, model=own.model, split="slow", n=4)
    result: dict[str, Any] = {}

    def run(resume: bool) -> None:
        try:
            result["value"] = evaluate(
                chance_pkg.ChanceEnv,
                config,
                adapter={"base_url": chance_server.url},
                concurrency=2,
                endpoint_down_limit=1.0,
                out=out,
                resume=resume,
                progress=False,
            )
        except EndpointsDown as exc:
            result["value"] = exc

    worker = threading.Thread(target=run, args=(False,))
    worker.start()
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if (out / "results.jsonl").exists() and len(_rows(out)) >= 2:
                break
            time.sleep(0.05)
    finally:
        own.stop()
    worker.join(timeout=300)
    assert not worker.is_alive()
    stopped = result["value"]
    assert isinstance(stopped, EndpointsDown), stopped
    assert str(stopped).startswith(f"every endpoint has been down for 1 s: {own.endpoint} (")
    kept = _rows(out)
    total = len(SPLITS["slow"]) * 4
    assert 2 <= len(kept) < total
    assert not [r for r in kept if "endpoint" in (r["reason"] or "")]  # none failed for it
    again = start_model_server(tiny_model, tmp_path, port=own.port)
    try:
        run(resume=True)
    finally:
        again.stop()
    rows = result["value"].rows
    assert _pairs(rows) == [(i, s) for i in range(len(SPLITS["slow"])) for s in range(4)]
    assert not [r for r in rows if "connection failed" in (r["reason"] or "")]
    counts = json.loads((out / "run.json").read_text())["endpoint_counts"][own.endpoint]
    assert counts["outages"] == 1 and counts["requests"] >= total  # both runs counted


def test_compare_reports_paired_differences(
    chance_dir, chance_server, model_server, tmp_path
) -> None:
    runs = []
    for name, threshold in (("a", "1.0"), ("b", "2.0")):  # nothing reaches 2.0: B passes none
        out = tmp_path / name
        args = _base(chance_dir, chance_server, model_server)
        args += ["--split", "test", "-n", "6", "--pass-threshold", threshold, "--out", str(out)]
        code, stdout, stderr = run_cli(args + ["--concurrency", "4"])
        assert code == 0, stderr
        runs.append(json.loads((out / "summary.json").read_text()))
        # The share of GRPO groups of 6 with no gradient, on the summary line after the
        # pass@k figures, and in report.md with the tasks that give none (B passes nothing:
        # every task, share 1).
        share = runs[-1]["zero_variance_share"]
        assert list(share) == [str(g) for g in range(2, 7)]
        (line,) = stdout.strip().splitlines()
        assert ", pass@6 " in line, stdout
        assert line.endswith(f", zero-variance share at G=6: {share['6']:.3f}"), stdout
        report = (out / "report.md").read_text()
        assert f"zero-variance share at G=6: {share['6']:.3f}" in report
        if name == "b":
            assert (
                share["6"] == 1.0
                and "no gradient (always or never passing): tasks 0, 1, 2, 3" in report
            )
    # Runs with different pass thresholds do not compare: --force compares them anyway.
    code, _, stderr = run_cli(["--compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert code == 2 and "differ in pass_threshold" in stderr, stderr
    code, stdout, stderr = run_cli(
        ["--compare", str(tmp_path / "a"), str(tmp_path / "b"), "--force"]
    )
    assert code == 0, stderr
    a, b = runs
    diff = b["pass_at_k"]["1"] - a["pass_at_k"]["1"]
    assert f"pass@1 B-A: {diff:+.3f}" in stdout
    fell = [t["task_index"] for t in a["per_task"] if t["pass_at_k"]["1"] > 0]
    named = f"task{'s' if len(fell) > 1 else ''} {', '.join(map(str, fell))}"
    assert f"pass to fail (pass rate fell): {named if fell else 'none'}" in stdout
    assert "fail to pass (pass rate rose): none" in stdout
    assert f"| {b['mean_reward']:.3f} | {b['coverage']:.3f} |" in stdout  # B's own figures


def test_unusable_configurations_exit_2_with_one_line(
    chance_dir, chance_server, model_server, tmp_path
) -> None:
    base = _base(chance_dir, chance_server, model_server)
    cases = {
        "no model": [str(chance_dir), "--endpoint", model_server.endpoint],
        "no such split": base + ["--split", "nope"],
        "index past the end": base + ["--split", "test", "--indices", "0,9"],
        "a secret with no value": base + ["--secret", "TOKEN"],
        "not a package": [str(tmp_path), "--endpoint", model_server.endpoint, "--model", "m"],
        "no endpoint there": [
            str(chance_dir),
            "--endpoint",
            f"http://127.0.0.1:{ors_server.free_port()}/v1",
            "--model",
            "m",
            "--base-url",
            chance_server.url,
        ],
    }
    for name, args in cases.items():
        code, stdout, stderr = run_cli(args + ["--out", str(tmp_path / name.replace(" ", "_"))])
        assert code == 2, (name, stderr)
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("orsgen eval: error: "), (name, stderr)


@pytest.mark.timeout(900)
def test_trl_evaluation_goes_through_the_adapter(
    chance_pkg, chance_server, tiny_model, tmp_path
) -> None:
    """TRL's own ``eval_dataset=load_tasks(split="test")``: the evaluation rollouts open the
    test tasks, their ``ors/*`` metrics (pass@k per group included) land under ``eval_``,
    and training's stay apart."""
    import functools

    import torch
    from trl import GRPOTrainer

    import tiny_model as tiny
    from orsgen.runtime.records.passk import pass_at_k

    torch.set_num_threads(1)
    url = chance_server.url
    trajectories = tmp_path / "trajectories.jsonl"
    args = tiny.cpu_grpo_config(
        tmp_path / "out",
        max_steps=1,
        eval_strategy="steps",
        eval_steps=1,
        per_device_eval_batch_size=8,
        num_generations_eval=2,
    )
    trainer = GRPOTrainer(
        model=str(tiny_model),
        args=args,
        train_dataset=chance_pkg.load_tasks(split="train", base_url=url),
        eval_dataset=chance_pkg.load_tasks(split="test", base_url=url),
        environment_factory=functools.partial(
            chance_pkg.ChanceEnv, base_url=url, trajectories=trajectories
        ),
        reward_funcs=chance_pkg.outcome_reward,
    )
    try:
        trainer.train()
    finally:
        chance_pkg.ChanceEnv.close_all()
    history = trainer.state.log_history
    trains = [h for h in history if "rewards/outcome_reward/mean" in h]
    evals = [h for h in history if "eval_ors/rollouts" in h]
    assert trains and evals, history
    assert all(not k.startswith("eval_") for h in trains for k in h)
    assert "ors/scored_frac" in trains[0] and "ors/pass@1" in trains[0]
    records = [json.loads(line) for line in trajectories.read_text().splitlines()]
    held_out = [r for r in records if r["split"] == "test"]
    # Every test task, twice (num_generations_eval), and no training task among them.
    assert sorted(r["task_index"] for r in held_out) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert all(r["split"] == "train" for r in records if r not in held_out)
    logged = evals[-1]
    assert logged["eval_ors/rollouts"] == 8
    groups: dict[int, list[bool]] = {}
    for r in held_out:
        groups.setdefault(r["task_index"], []).append((r["reward"] or 0.0) >= 1.0)
    for k in (1, 2):
        expected = sum(pass_at_k(2, sum(g), k) for g in groups.values()) / len(groups)
        assert logged[f"eval_ors/pass@{k}"] == pytest.approx(expected), logged


def test_upload_run_sends_every_rollout_once_and_the_view_command_is_printed(
    chance_dir, chance_server, model_server, tmp_path
) -> None:
    """``--upload-run``: each rollout of the evaluation reaches a stand-in of the platform
    API (tests/platform_api.py) once, with its messages and its reward; no secret goes."""
    from platform_api import PlatformAPI

    secret = "sk-eval-upload-SECRET-3f1b"
    api = PlatformAPI(tmp_path)
    out = tmp_path / "up"
    args = _base(chance_dir, chance_server, model_server)
    args += ["--split", "test", "-n", "2", "--out", str(out), "--upload-run", "eval-upload"]
    args += ["--secret", f"TOKEN={secret}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
    env.update(
        OPENREWARD_DISABLE_UPDATE_CHECK="1",
        PYTHONPATH=str(ROOT),
        OPENREWARD_API_URL=api.url,
        OPENREWARD_API_KEY="or-eval-key",
    )
    env.pop("OPENAI_API_KEY", None)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "orsgen", "eval", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        api.stop()
    assert done.returncode == 0, done.stderr
    assert f"orsgen view {out}" in done.stderr
    assert "runs UI: 8 rollouts uploaded to run 'eval-upload', 0 dropped" in done.stderr
    rows = _rows(out)
    uploaded = list(api.rollouts().values())
    assert len(uploaded) == len(rows) == 8
    by_task: dict[int, list[Any]] = {}
    for r in uploaded:
        assert (r["runName"], r["split"], r["environment"]) == ("eval-upload", "test", "chanceenv")
        assert r["run_info"]["model_name"] == model_server.model
        assert r["run_info"]["training_stage"] == "pretrained"
        (update,) = r["updates"]
        messages = r["messages"]
        assert messages[0]["type"] == "user_message"
        assert any(m["type"] == "tool_call" and m["name"] == "say" for m in messages)
        assert messages[-1]["isFinished"] is True
        by_task.setdefault(update["rollout_info"]["task_index"], []).append(
            (messages[-1].get("reward"), r["metadata"]["verdict"])
        )
    for task in range(4):
        want = sorted((row["reward"], row["verdict"]) for row in rows if row["task_index"] == task)
        assert sorted(by_task[task]) == want, task
    word = SPLITS["test"][0]["word"]
    assert any(word in r["messages"][0]["content"] for r in uploaded)
    assert secret not in "\n".join(q["body"] for q in api.requests())

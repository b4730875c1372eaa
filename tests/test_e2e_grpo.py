"""A real GRPOTrainer.train() on CPU against a real echo ORS server, using exactly the
generated package's three exports (load_tasks, EchoEnv, outcome_reward).

Nothing is mocked: TRL generates with a tiny local Qwen3 (examples/tiny_model.py),
parses its tool calls, calls the adapter's methods, and the adapter talks to an
instrumented openreward server over loopback. What happened is counted at the server.
"""

from __future__ import annotations

import csv
import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ors_server

pytestmark = pytest.mark.slow  # real training: the fast tier leaves it out


ROOT = Path(__file__).resolve().parents[1]
ECHO_ENV = ROOT / "examples" / "echo_env.py"

pytest.importorskip("trl")
pytest.importorskip("tokenizers")

import tiny_model  # noqa: E402  (examples/, on sys.path via conftest)
import training_report  # noqa: E402

from generated.echo import EchoEnv, load_tasks, outcome_reward  # noqa: E402


def _episodes(url: str, dataset: Any) -> list[Any]:
    """The real prompt and tool answer of every task, read through the adapter, so the
    warm-up trains on exactly the text the rollouts will see."""
    tiny = tiny_model
    env = EchoEnv(base_url=url)
    episodes = []
    try:
        for row in dataset:
            prompt = env.reset(**row)
            answer = env.echo(text=row["target"])
            assert env.reward == 1.0, answer
            episodes.append(tiny.Episode(prompt, {"text": row["target"]}, answer))
    finally:
        env.close()
    return episodes


def _warmed_model(server: ors_server.RunningServer, tmp_path: Path) -> tuple[Any, Path]:
    """The echo tasks, and a tiny model warmed up on them so that it makes real tool calls."""
    import torch

    torch.set_num_threads(1)
    train_dataset = load_tasks(base_url=server.url)
    assert train_dataset["target"] == ["apple", "banana", "cherry", "damson"]
    probe = EchoEnv(base_url=server.url)  # no I/O: only to hand the tool methods to the builder
    model_dir = tiny_model.build_tiny_model(
        tmp_path / "tiny",
        tools=[probe.echo, probe.hint],
        episodes=_episodes(server.url, train_dataset),
        tool_name="echo",
    )
    assert server.wait_sessions(0) == 0
    return train_dataset, model_dir


@pytest.mark.timeout(300)
def test_grpo_train_reaches_the_server(ors_servers: ors_server.Servers, tmp_path: Path) -> None:
    from trl import GRPOTrainer

    server = ors_servers.own(ECHO_ENV)  # a server of its own: the counts are this test's alone
    train_dataset, model_dir = _warmed_model(server, tmp_path)
    server.reset_counts()

    returned: list[float | None] = []
    env_types: set[type] = set()

    def recording_reward(environments: Any, **kwargs: Any) -> list[float | None]:
        """outcome_reward itself, with what it returned to the trainer written down."""
        env_types.update(type(e) for e in environments)
        rewards = outcome_reward(environments, **kwargs)
        returned.extend(rewards)
        return rewards

    recording_reward.__name__ = outcome_reward.__name__

    args = tiny_model.cpu_grpo_config(tmp_path / "out", max_steps=2)
    trainer = GRPOTrainer(
        model=str(model_dir),
        args=args,
        train_dataset=train_dataset,
        environment_factory=functools.partial(EchoEnv, base_url=server.url),
        reward_funcs=recording_reward,
    )
    # TRL took exactly the adapter's tool methods as tools (close is a property, the
    # runtime's helpers are private), and it probed the class without any I/O.
    assert sorted(t.__name__ for t in trainer.tools) == sorted(EchoEnv.WIRE_NAMES)
    assert server.requests().get("POST /create", 0) == 0
    open_after_train = -1
    try:
        trainer.train()
        open_after_train = server.open_sessions()
    finally:
        # TRL never closes its environments; the class-level close_all() ends every
        # session the trainer's pooled adapters hold.
        envs = {id(e): e for e in (trainer.environments or [])}
        for pool in getattr(trainer, "_environment_pool", {}).values():
            envs.update({id(e): e for e in pool})
        EchoEnv.close_all()

    counts = server.requests()
    print(f"server counts: {counts}; rewards returned: {returned}")
    # 2 steps x 2 rollouts: every rollout opened an ORS session through reset().
    assert counts.get("POST /create", 0) >= 4, counts
    # At least one tool call the model generated reached the server, at the tool-call route
    # of the environment's wire name (only ``echo`` ever scores, so a 1.0 below means the
    # call named the ``echo`` tool with the right word).
    assert counts.get("POST /echoenv/call", 0) >= 1, counts
    # What the reward function really returned to the trainer.
    assert env_types == {EchoEnv}, env_types
    assert len(returned) == 4, returned
    assert 1.0 in [r for r in returned if r is not None], returned
    # The trainer logged the reward under the function's name.
    logged = [h for h in trainer.state.log_history if "rewards/outcome_reward/mean" in h]
    assert len(logged) == 2, trainer.state.log_history
    # TRL leaves the last batch's sessions open; once the test closes the pooled
    # adapters, the server holds none.
    assert open_after_train >= 1, open_after_train
    assert envs, "the trainer made no environments"
    assert server.wait_sessions(0, timeout=30) == 0


@pytest.mark.timeout(300)
def test_the_generated_outcome_reward_puts_ors_metrics_in_the_trainers_log(
    ors_servers: ors_server.Servers, tmp_path: Path
) -> None:
    """issue 23: ``reward_funcs=outcome_reward`` exactly as the README shows, the function
    imported from the generated package (not the runtime's), and TRL's ``log_metric``
    reaches the runtime through it: ``ors/*`` land in ``trainer.state.log_history``, next
    to TRL's own figures of the same step (``_calculate_rewards`` passes ``log_metric`` to
    every reward function, trl/trainer/grpo_trainer.py around line 1585)."""
    from trl import GRPOTrainer

    assert outcome_reward.__module__ == "generated.echo.rewards"
    server = ors_servers.own(ECHO_ENV)
    train_dataset, model_dir = _warmed_model(server, tmp_path)
    trainer = GRPOTrainer(
        model=str(model_dir),
        args=tiny_model.cpu_grpo_config(tmp_path / "out", max_steps=2),
        train_dataset=train_dataset,
        environment_factory=functools.partial(EchoEnv, base_url=server.url),
        reward_funcs=outcome_reward,
    )
    try:
        trainer.train()
    finally:
        EchoEnv.close_all()

    steps = [h for h in trainer.state.log_history if "rewards/outcome_reward/mean" in h]
    assert len(steps) == 2, trainer.state.log_history
    for logged in steps:
        ors = {k: v for k, v in logged.items() if k.startswith("ors/")}
        # Each step scored its own 2 rollouts (one group of num_generations=2).
        assert ors.get("ors/rollouts") == 2.0, logged
        assert {"ors/scored_frac", "ors/finished_frac", "ors/open_sessions"} <= set(ors), logged
        assert ors["ors/scored_frac"] in (0.0, 0.5, 1.0), logged
    assert server.wait_sessions(0, timeout=30) == 0


@pytest.mark.timeout(300)
def test_demo_training_path_learns_and_reports(
    ors_servers: ors_server.Servers, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """scripts/demo.sh's training path (examples/train_echo.py) with small settings: the
    mixed warm-up gives GRPO groups whose rewards differ, so the gradient is not zero, and
    the run prints the per-step table and writes it with its plot."""
    import train_echo  # examples/, as demo.sh runs it

    server = ors_servers.own(ECHO_ENV)
    out, results = tmp_path / "demo", tmp_path / "results"
    code = train_echo.main(
        [
            "--base-url", server.url, "--steps", "4", "--right-share", "0.5",
            "--learning-rate", "5e-4", "--group-size", "4", "--batch-size", "8",
            "--output-dir", str(out), "--result-dir", str(results),
        ]
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0
    result = json.loads((results / "rank-0.json").read_text())
    per_step = result["per_step"]
    assert [row["step"] for row in per_step] == [1, 2, 3, 4], per_step
    # Every step's coverage is the runtime's ors/scored_frac, which the generated
    # outcome_reward logs through TRL; the warm-up's right-and-wrong mix gave some group
    # rewards that differ.
    assert all(row["coverage"] is not None and 0 < row["coverage"] <= 1 for row in per_step)
    assert any(row["grad_norm"] > 0 for row in per_step), per_step
    assert any(0 < row["reward_mean"] < 1 for row in per_step), per_step
    # The table, printed a line per step as it trains, with the figures of the result; what
    # TRL prints itself (its per-step dicts, progress bars, warnings) is in train.log.
    lines = printed.splitlines()
    header = lines.index("step  reward mean  reward std  scored  grad norm")
    table = [line.split() for line in lines[header + 1 : header + 5]]
    assert [int(cells[0]) for cells in table] == [1, 2, 3, 4], printed[-3000:]
    assert [cells[4] for cells in table] == [f"{r['grad_norm']:.4f}" for r in per_step]
    assert f"{out / 'train.log'}" in printed
    assert "{'loss'" not in printed and "it/s]" not in printed, printed[-3000:]
    raw = (out / "train.log").read_text()
    assert raw.count("'rewards/outcome_reward/mean'") == 4, raw[-3000:]
    # ... written next to the run's output, with its plot.
    with (out / "steps.csv").open() as f:
        written = list(csv.DictReader(f))
    assert [int(row["step"]) for row in written] == [1, 2, 3, 4]
    assert [float(row["coverage"]) for row in written] == [r["coverage"] for r in per_step]
    png = (out / "reward.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000, len(png)
    # The per-task table orsgen's TaskTableCallback wrote: 4 steps x 8 rollouts over the 4
    # train tasks, every task trained on; printed at the end and plotted.
    tasks = training_report.read_task_table(out / "ors_tasks.csv")
    assert [(t.split, t.task_index) for t in tasks] == [("train", i) for i in range(4)], tasks
    assert sum(t.rollouts for t in tasks) == 4 * 8, tasks
    assert all(t.last_step is not None and 1 <= t.last_step <= 4 for t in tasks), tasks
    names = dict(enumerate(["apple", "banana", "cherry", "damson"]))
    assert training_report.format_task_table(tasks, names) in printed
    png = (out / "tasks.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n"), png[:8]
    # The warmed-up and the trained model, as directories a server loads.
    for name in ("model-before", "model-after"):
        assert {"config.json", "model.safetensors", "chat_template.jinja"} <= {
            f.name for f in (out / name).iterdir()
        }, name
    assert (out / "model-before" / "model.safetensors").read_bytes() != (
        out / "model-after" / "model.safetensors"
    ).read_bytes()
    assert server.wait_sessions(0, timeout=30) == 0


@pytest.mark.timeout(600)
def test_demo_eval_step_compares_the_warmed_up_and_trained_models(
    ors_servers: ors_server.Servers, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """scripts/demo.sh's eval step after its training path: examples/eval_demo.py serves the
    saved models with a real ``transformers serve``, evaluates them with ``orsgen eval``'s API
    on the held-out test split of a real echo server, and ``orsgen compare`` (the
    command) names both runs."""
    import eval_demo  # examples/, as demo.sh runs it
    import train_echo

    server = ors_servers.own(ECHO_ENV)
    train_words = load_tasks(base_url=server.url)["target"]
    test_words = load_tasks(split="test", base_url=server.url)["target"]
    assert len(test_words) == 4 and not set(test_words) & set(train_words), test_words
    out = tmp_path / "demo"
    code = train_echo.main(
        [
            "--base-url", server.url, "--steps", "2", "--right-share", "0.33",
            "--learning-rate", "5e-4", "--group-size", "4", "--batch-size", "8",
            "--output-dir", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    assert (out / "ors_tasks.csv").is_file() and (out / "tasks.png").is_file()
    before, after = out / "model-before", out / "model-after"
    runs = out / "eval"
    code = eval_demo.main(
        ["--url", server.url, "--before", str(before), "--after", str(after)]
        + ["--split", "test", "-n", "2", "--out", str(runs), "--no-compare"]
    )
    printed = capsys.readouterr().out
    assert code == 0
    for name, model in (("before", before), ("after", after)):
        summary = json.loads((runs / "test" / name / "summary.json").read_text())
        assert (summary["model"], summary["split"], summary["n"]) == (str(model), "test", 2)
        assert summary["rollouts"] == 8 and (runs / "test" / name / "report.md").is_file()
        rows = [json.loads(line) for line in (runs / "test" / name / "results.jsonl").open()]
        prompts = {r["task_index"]: r["messages"][0]["content"] for r in rows}
        # The held-out words reached the model: reset() opened the test split's tasks.
        assert [w in prompts[i] for i, w in enumerate(test_words)] == [True] * 4, prompts
        assert f"{name} ({model}): 8 rollouts on split 'test'" in printed, printed

    compare = subprocess.run(
        [sys.executable, "-m", "orsgen", "compare"]
        + [str(runs / "test" / "before"), str(runs / "test" / "after")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert compare.returncode == 0, compare.stderr
    lines = compare.stdout.splitlines()  # a table of the runs, baseline first
    assert lines[2].startswith(f"| A: {runs / 'test' / 'before'} | {before} | "), compare.stdout
    assert lines[3].startswith(f"| B: {runs / 'test' / 'after'} | {after} | "), compare.stdout
    assert "4 tasks in both runs" in compare.stdout and "pass@1 B-A: " in compare.stdout
    assert server.wait_sessions(0, timeout=30) == 0

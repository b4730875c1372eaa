"""A real GRPOTrainer.train() with environment-owned data on trustenv, whose grader
crashes on task 1 and whose calls break on the server on task 4 (tests/envs/trust_env.py).

One training run (``train_dataset=None``, a 6-task split, group size 2, 6 steps), read
three ways:

- the task of every rollout, from the prompts TRL handed the reward function: every group
  on one task, at least 5 distinct tasks (the adapter chooses; TRL's placeholder rows carry
  no task, ``trl/trainer/grpo_trainer.py`` around line 862);
- TRL's own ``tools/failure_frequency`` (counted only when a tool raises, around line 1981)
  and orsgen's ``ors/scored_frac`` (through ``log_metric``, around line 1585), per step in
  ``trainer.state.log_history``: > 0 and < 1 on the breaking tasks' steps, 0 and 1 elsewhere;
- the trajectory file: one line per rollout, no secret.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest

import ors_server
from envs.trust_support import TRUST_ENV, TrustAdapter

pytest.importorskip("trl")
pytest.importorskip("tokenizers")

import tiny_model  # noqa: E402  (examples/, on sys.path via conftest)

from orsgen.runtime.rewards import outcome_reward  # noqa: E402

WORDS = ["apple", "banana", "cherry", "damson", "elder", "fig"]
BROKEN = {"banana", "elder"}  # task 1: the grader crashes; task 4: the call breaks
SECRET = "sk-e2e-trust-5f1c0ffee"
WORD = re.compile(r"Call echo with the word '([^']+)'")


def _word(prompt: Any) -> str:
    text = prompt if isinstance(prompt, str) else json.dumps(prompt)
    found = WORD.findall(text)
    assert found, prompt
    return found[-1]


@pytest.fixture(scope="module")
def run(
    ors_servers: ors_server.Servers, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    import torch
    from trl import GRPOTrainer

    torch.set_num_threads(1)
    tmp = tmp_path_factory.mktemp("grpo-trust")
    server = ors_servers.own(TRUST_ENV)
    probe = TrustAdapter(base_url=server.url)  # no I/O: only the tool methods for the builder
    episodes = [
        tiny_model.Episode(f"Call echo with the word {w!r}.", {"text": w}, f"echo: {w}")
        for w in WORDS
    ]
    model_dir = tiny_model.build_tiny_model(
        tmp / "tiny", tools=[probe.echo, probe.hint], episodes=episodes, tool_name="echo"
    )
    steps: list[dict[str, Any]] = []

    def recording_reward(environments: Any, prompts: Any, completions: Any, **kw: Any) -> Any:
        """outcome_reward itself (log_metric included), with what it saw written down."""
        rewards = outcome_reward(environments, completions=completions, **kw)
        steps.append(
            {
                "words": [_word(p) for p in prompts],
                "rewards": rewards,
                # What the model read back from each tool call.
                "tool_messages": [
                    m["content"] for c in completions for m in c if m.get("role") == "tool"
                ],
            }
        )
        return rewards

    recording_reward.__name__ = "outcome_reward"
    trajectories = tmp / "runs" / "trust.jsonl"
    args = tiny_model.cpu_grpo_config(tmp / "out", max_steps=6)
    # Room for an error text: TRL drops a tool message that would pass max_completion_length.
    args.max_completion_length = 256
    trainer = GRPOTrainer(
        model=str(model_dir),
        args=args,
        train_dataset=None,  # the environment owns the data
        environment_factory=functools.partial(
            TrustAdapter,
            base_url=server.url,
            secrets={"api_token": SECRET},
            trajectories=str(trajectories),
        ),
        reward_funcs=recording_reward,
    )
    try:
        trainer.train()
    finally:
        TrustAdapter.close_all()
    logged = [h for h in trainer.state.log_history if "tools/failure_frequency" in h]
    print("\nper step:")
    for step, entry in zip(steps, logged):
        print(
            f"  {step['words']} failure_frequency={entry['tools/failure_frequency']:.2f} "
            f"scored_frac={entry.get('ors/scored_frac')} rewards={step['rewards']}"
        )
    return {"steps": steps, "logged": logged, "trajectories": trajectories, "server": server}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_environment_owned_data_keeps_groups_on_one_task(run: dict[str, Any]) -> None:
    groups = [s["words"] for s in run["steps"]]
    assert len(groups) == 6, groups  # one group of two per step
    assert all(len(g) == 2 and g[0] == g[1] for g in groups), groups
    assert len({g[0] for g in groups}) >= 5, groups


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_breaking_calls_show_in_trls_failures_and_in_coverage(run: dict[str, Any]) -> None:
    steps, logged = run["steps"], run["logged"]
    assert len(logged) == len(steps) == 6, run["logged"]
    broken_steps = 0
    for step, entry in zip(steps, logged):
        word = step["words"][0]
        if word in BROKEN:
            broken_steps += 1
            assert entry["tools/failure_frequency"] > 0, (word, entry)
            assert entry["ors/scored_frac"] < 1, (word, entry)
            assert entry["ors/env_error_frac"] > 0, (word, entry)
            # What the model read: TRL's {"error": str(exc)} with orsgen's text inside.
            assert any(
                m.startswith("{'error': \"tool 'echo' failed in the environment (tool_raised): ")
                for m in step["tool_messages"]
            ), step["tool_messages"]
        else:
            assert entry["ors/scored_frac"] == 1.0, (word, entry)
            assert entry["tools/failure_frequency"] == 0.0, (word, entry)
        assert entry["ors/reset_s"] > 0 and "ors/tool_call_s" in entry
    assert broken_steps >= 1, [s["words"] for s in steps]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_trajectory_file_has_every_rollout(run: dict[str, Any]) -> None:
    text = run["trajectories"].read_text()
    assert SECRET not in text
    lines = [json.loads(line) for line in text.splitlines()]
    chosen = [r["task_index"] for r in lines]
    assert len(lines) == 12 and all(r["task_chosen"] for r in lines), chosen
    expected = [WORDS.index(w) for s in run["steps"] for w in s["words"]]
    assert chosen == expected
    for record in lines:
        if WORDS[record["task_index"]] in BROKEN and record["calls"]:
            assert record["outcome"] == "failed" and record["why_unscored"] == "tool_raised"

"""A real GRPOTrainer with environment-owned data (``train_dataset=None``) on coinenv, whose
tasks pass with known probabilities drawn by the environment itself (bench/coin_env.py: 7
always, 7 never, 6 half the time), through the GENERATED package (bench/coinenv).

Two runs on the same seed, uniform task choice and ``curriculum="pass_rate"``: TRL's own
``frac_reward_zero_std`` (``grpo_trainer.py``: the share of groups whose rewards have zero
std) is lower with the curriculum, and the ``ors/curriculum/*`` metrics reach
``log_history``. The curriculum run saves a checkpoint half way; a third run resumes from
it: the curriculum's state after the resume equals the saved one, and the first groups it
chooses are the ones the original run chose after the save. Slow: three trainings.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest

import ors_server
from conftest import import_generated

pytest.importorskip("trl")
pytest.importorskip("tokenizers")

import tiny_model  # noqa: E402  (examples/, on sys.path via conftest)

from orsgen.runtime.choosing.checkpoint import CurriculumCheckpoint, path  # noqa: E402
from orsgen.runtime.choosing import tasks  # noqa: E402
from orsgen.runtime.choosing.curriculum import PassRateCurriculum  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
COIN_ENV = ROOT / "bench" / "coin_env.py"
TASK = re.compile(r"Task (\d+):")
STEPS, SAVE_AT, GROUP, BATCH = 24, 12, 4, 8  # two groups per step


def _task(prompt: Any) -> int:
    found = TASK.findall(prompt if isinstance(prompt, str) else json.dumps(prompt))
    assert found, prompt
    return int(found[-1])


class Recording(PassRateCurriculum):
    """A curriculum that writes down every state it loads."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[dict[str, Any]] = []

    def load_state_dict(self, state: Any) -> None:
        self.loads.append(json.loads(json.dumps(state)))
        super().load_state_dict(state)


def _curriculum_saved(file: Path) -> dict[str, Any]:
    """The one stream's curriculum state a checkpoint holds (the file keys each stream)."""
    (stream,) = json.loads(file.read_text())["streams"]
    assert stream["stream"]["class"].endswith(".CoinEnv") and stream["stream"]["split"] == "train"
    return dict(stream["state"]["curriculum"])


def _train(
    server: ors_server.RunningServer,
    model_dir: Path,
    out: Path,
    curriculum: PassRateCurriculum | str | None,
    max_steps: int,
    resume: Path | None = None,
) -> dict[str, Any]:
    from trl import GRPOTrainer

    coinenv = import_generated(ROOT / "bench" / "coinenv")
    CoinEnv, outcome_reward = coinenv.CoinEnv, coinenv.outcome_reward
    tasks.samplers().clear()  # each run its own stream, as in a new process
    steps: list[list[int]] = []

    def recording_reward(environments: Any, prompts: Any, **kw: Any) -> Any:
        steps.append([_task(p) for p in prompts])
        return outcome_reward(environments, **kw)

    recording_reward.__name__ = "outcome_reward"
    saving = curriculum is not None
    args = tiny_model.cpu_grpo_config(
        out,
        max_steps=max_steps,
        num_generations=GROUP,
        per_device_train_batch_size=BATCH,
        max_completion_length=8,
        save_strategy="steps" if saving else "no",
        save_steps=SAVE_AT,
    )
    # The string form gets the callback with no argument: it finds the curriculum itself.
    named = curriculum if isinstance(curriculum, PassRateCurriculum) else None
    callback = CurriculumCheckpoint(named) if curriculum is not None else None
    trainer = GRPOTrainer(
        model=str(model_dir),
        args=args,
        train_dataset=None,
        environment_factory=functools.partial(CoinEnv, base_url=server.url, curriculum=curriculum),
        reward_funcs=recording_reward,
        callbacks=[callback] if callback is not None else None,
    )
    try:
        trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    finally:
        CoinEnv.close_all()
    logged = [h for h in trainer.state.log_history if "frac_reward_zero_std" in h]
    return {"steps": steps, "logged": logged, "callback": callback}


@pytest.fixture(scope="module")
def runs(
    ors_servers: ors_server.Servers, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    import torch

    torch.set_num_threads(1)
    tmp = tmp_path_factory.mktemp("curriculum")
    server = ors_servers.own(COIN_ENV)
    probe = import_generated(ROOT / "bench" / "coinenv").CoinEnv(
        base_url=server.url
    )  # no I/O: only the tool method for the builder
    model_dir = tiny_model.build_untrained_model(
        tmp / "tiny",
        tools=[probe.note],
        episodes=[tiny_model.Episode("Task 0: answer in one word.", {"text": "x"}, "noted")],
        tool_name="note",
    )
    uniform = _train(server, model_dir, tmp / "uniform", None, STEPS)
    curriculum = PassRateCurriculum()
    curved = _train(server, model_dir, tmp / "pass_rate", curriculum, STEPS)
    saved = _curriculum_saved(path(tmp / "pass_rate", SAVE_AT))
    resumed = _train(
        server,
        model_dir,
        tmp / "pass_rate",
        Recording(),
        SAVE_AT + 1,
        resume=tmp / "pass_rate" / f"checkpoint-{SAVE_AT}",
    )
    # The same resume with curriculum="pass_rate" and CurriculumCheckpoint() (no object),
    # from a copy of the checkpoint: each resumed run saves its own checkpoint-13.
    shutil.copytree(
        tmp / "pass_rate" / f"checkpoint-{SAVE_AT}", tmp / "named" / f"checkpoint-{SAVE_AT}"
    )
    named = _train(
        server,
        model_dir,
        tmp / "named",
        "pass_rate",
        SAVE_AT + 1,
        resume=tmp / "named" / f"checkpoint-{SAVE_AT}",
    )
    curves = {
        name: [round(h["frac_reward_zero_std"], 3) for h in run["logged"]]
        for name, run in {"uniform": uniform, "pass_rate": curved}.items()
    }
    print("\nfrac_reward_zero_std per step:", json.dumps(curves))
    # bench/results/curriculum_grpo.json holds a copy of this file from a recorded run.
    out = tmp / "curriculum_grpo.json"
    out.write_text(json.dumps({"steps": STEPS, "group": GROUP, "batch": BATCH, **curves}) + "\n")
    after = {run: _curriculum_saved(path(tmp / run, SAVE_AT + 1)) for run in ("pass_rate", "named")}
    return {
        "uniform": uniform,
        "pass_rate": curved,
        "saved": saved,
        "resumed": resumed,
        "named": named,
        "after": after,
    }


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_curriculum_lowers_trls_frac_reward_zero_std(runs: dict[str, Any]) -> None:
    uniform, curved = runs["uniform"], runs["pass_rate"]
    for run in (uniform, curved):
        assert len(run["logged"]) == STEPS
        # every GRPO group on one task
        for batch in run["steps"]:
            groups = [batch[i : i + GROUP] for i in range(0, BATCH, GROUP)]
            assert all(len(set(g)) == 1 for g in groups), batch
    zero = {
        name: statistics.fmean(h["frac_reward_zero_std"] for h in run["logged"])
        for name, run in (("uniform", uniform), ("pass_rate", curved))
    }
    assert zero["pass_rate"] < zero["uniform"], zero
    # after the first pass over the 20 tasks (10 steps) the curriculum is choosing
    late = statistics.fmean(h["frac_reward_zero_std"] for h in curved["logged"][12:])
    assert late < 0.5, (late, zero)
    pools = [h for h in curved["logged"] if "ors/curriculum/tasks_learning" in h]
    assert len(pools) == STEPS
    assert pools[-1]["ors/curriculum/tasks_learning"] >= 3
    assert not any("ors/curriculum/tasks_learning" in h for h in uniform["logged"])


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_resume_restores_the_curriculum_state(runs: dict[str, Any]) -> None:
    callback = runs["resumed"]["callback"]
    assert callback.restored_from is not None
    assert callback.curriculum.loads == [runs["saved"]]  # once, by its stream
    # The first step after the resume is chosen from the restored state alone, so it is
    # the step the original run chose after its save.
    assert runs["resumed"]["steps"][0] == runs["pass_rate"]["steps"][SAVE_AT]


def _choices(state: dict[str, Any]) -> dict[str, Any]:
    """What a curriculum state says was chosen (the rewards are the server's fresh draws)."""
    groups = sorted((group, task) for group, task, _ in state["history"])
    fixed = ("tasks", "seed", "group_size", "planned", "plan", "last_chosen")
    return {"groups": groups, **{key: state[key] for key in fixed}}


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_the_string_form_resumes_with_a_callback_that_holds_no_curriculum(
    runs: dict[str, Any],
) -> None:
    """curriculum="pass_rate" and CurriculumCheckpoint(): the state saved at step 12 is
    handed to the stream the resumed run makes, which then chooses what the object form
    chose, and the step-13 save holds the same choices."""
    callback = runs["named"]["callback"]
    assert callback.curriculum is None and callback.restored_from is not None
    assert runs["named"]["steps"][0] == runs["pass_rate"]["steps"][SAVE_AT]
    assert runs["named"]["steps"] == runs["resumed"]["steps"]
    after = runs["after"]
    assert after["named"]["planned"] > runs["saved"]["planned"]
    assert _choices(after["named"]) == _choices(after["pass_rate"])

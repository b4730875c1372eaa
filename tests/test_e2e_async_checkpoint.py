"""CurriculumCheckpoint under AsyncGRPOTrainer (issue 29, item 3): the adapters choose tasks
in the rollout worker's spawned process, which the trainer's checkpoints never reach, so
the trainer process's copy was empty. The old callback wrote that empty state, and the
resume raised "a curriculum needs at least one task". The callback now refuses when the
real AsyncGRPOTrainer is constructed (transformers' ``on_init_end``, before the rollout
worker or the vLLM client exist), naming what to do, so no checkpoint can hold a state
that breaks the resume."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from conftest import import_generated

pytest.importorskip("trl")
pytest.importorskip("tokenizers")

import tiny_model  # noqa: E402  (examples/, on sys.path via conftest)

from orsgen import CurriculumCheckpoint  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_async_grpo_trainer_refuses_the_checkpoint_at_construction(tmp_path: Path) -> None:
    from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer

    coinenv = import_generated(ROOT / "bench" / "coinenv")
    probe = coinenv.CoinEnv(base_url="http://127.0.0.1:9")  # no I/O: its tool method only
    model_dir = tiny_model.build_untrained_model(
        tmp_path / "tiny",
        tools=[probe.note],
        episodes=[tiny_model.Episode("Task 0: answer in one word.", {"text": "x"}, "noted")],
        tool_name="note",
    )
    args = AsyncGRPOConfig(
        output_dir=str(tmp_path / "out"),
        max_steps=2,
        num_generations=2,
        per_device_train_batch_size=2,
        save_steps=1,
        report_to="none",
        use_cpu=True,
    )
    factory = functools.partial(
        coinenv.ScoredCoinEnv, base_url="http://127.0.0.1:9", curriculum="pass_rate"
    )
    with pytest.raises(ValueError, match="cannot save the task choice of AsyncGRPOTrainer"):
        AsyncGRPOTrainer(
            model=str(model_dir),
            args=args,
            environment_factory=factory,
            callbacks=[CurriculumCheckpoint()],
        )
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("checkpoint-*"))

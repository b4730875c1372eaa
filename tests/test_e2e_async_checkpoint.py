"""CurriculumCheckpoint under a real AsyncGRPOTrainer run, stopped and resumed (issue 29,
item 3): TRL's trainer loop, checkpoints and ``resume_from_checkpoint``, its
AsyncRolloutWorker spawning the rollout child, against the stand-in generation server and
a real ORS server (coinechoenv: tasks 0-6 always pass, 7-13 never, 14-19 half the time, by
the environment's own draws). What AsyncGRPO cannot run on a CPU is replaced as
tests/async_trainer.py says.

The tasks are chosen in the worker's process; the checkpoint must hold *its* curriculum,
and the resumed worker must continue it: every group planned before the save keeps its
task, and the choices go on past them (a restarted curriculum re-plans from group 0 with
other draws). At the old main the callback refused the trainer at construction.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

import ors_server

pytest.importorskip("trl")
pytest.importorskip("tokenizers")
pytest.importorskip("aiohttp")

from async_trainer import NoWeightSync, cpu_config, on_cpu, tiny_model_for, train  # noqa: E402
from envs.coin_echo_support import (  # noqa: E402
    COIN_ECHO_ENV,
    CoinEchoAdapter,
    ScoredCoinEchoAdapter,
)
from standin_vllm import StandinVLLM, echo_tokenizer  # noqa: E402

from orsgen import CurriculumCheckpoint  # noqa: E402
from orsgen.runtime.choosing import checkpoint  # noqa: E402
from orsgen.runtime.choosing.checkpoint import path  # noqa: E402

NUM_GENERATIONS = 2


def _stream(file: Path) -> dict[str, Any]:
    saved = json.loads(file.read_text())
    assert saved["format"] == 2, saved
    assert len(saved["streams"]) == 1, saved
    stream = saved["streams"][0]
    assert stream["stream"]["class"].endswith("ScoredCoinEchoAdapter"), stream["stream"]
    assert stream["stream"]["split"] == "train", stream["stream"]
    return dict(stream["state"])


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_async_grpo_run_stopped_and_resumed_continues_the_workers_curriculum(
    ors_servers: ors_server.Servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch
    from trl.experimental.async_grpo import AsyncGRPOTrainer

    torch.set_num_threads(1)
    on_cpu(monkeypatch)
    server = ors_servers.own(COIN_ECHO_ENV)
    out = tmp_path / "out"
    try:
        probe = CoinEchoAdapter(base_url=server.url)
        tokenizer = echo_tokenizer([probe.echo], [f"t{i}" for i in range(20)])
        model = tiny_model_for(tokenizer, tmp_path / "model")
        factory = functools.partial(
            ScoredCoinEchoAdapter, base_url=server.url, curriculum="pass_rate"
        )

        def run(max_steps: int, resume: bool | None) -> None:
            with StandinVLLM(tokenizer) as generator:
                args = cpu_config(out, generator.url, max_steps=max_steps, save_steps=2)
                trainer = AsyncGRPOTrainer(
                    model=str(model),
                    args=args,
                    processing_class=tokenizer,
                    environment_factory=factory,
                    callbacks=[CurriculumCheckpoint()],
                    weight_transfer=NoWeightSync(),
                )
                train(trainer, resume_from_checkpoint=resume)
                assert trainer.state.global_step == max_steps

        run(2, None)  # stopped after the checkpoint at step 2
        first = _stream(path(out, 2))
        run(4, True)  # resumed from checkpoint-2
        second = _stream(path(out, 4))
    finally:
        server.stop()

    # The worker's curriculum reached the checkpoint, not the trainer's empty process: by
    # step 2 the trainer trained on more than 40 rollouts, so the first pass (20 groups)
    # was over and outcomes were observed.
    saved = first["curriculum"]
    assert saved["tasks"] == list(range(20)), saved["tasks"]
    assert saved["planned"] > 20 and saved["history"], saved
    # The resumed worker continued it: the same plan for every group planned before the
    # save, then more groups, and its reset count went on from the saved one.
    resumed = second["curriculum"]
    plan, later = dict(map(tuple, saved["plan"])), dict(map(tuple, resumed["plan"]))
    assert {g: later.get(g) for g in plan} == plan
    assert resumed["planned"] > saved["planned"], (resumed["planned"], saved["planned"])
    assert second["given"] > first["given"], (second["given"], first["given"])
    # What the checkpoint copied is the worker's own file, whole.
    assert (out / checkpoint.DIRECTORY / checkpoint.LATEST).is_file()

"""Every ``ors/*`` figure per environment under a real ``AsyncGRPOTrainer`` (issue 35): a
dict ``environment_factory`` of two environments that score themselves (trustenv, whose
grader crashes on task 1 and whose calls break on task 4, and coinechoenv), a weighted
``bundle_tasks`` of rows on which each environment chooses its own tasks, TRL's trainer
loop and its rollout child, against the stand-in generation server and real ORS servers.
What AsyncGRPO cannot run on a CPU is replaced as tests/async_trainer.py says.

Each ``get_reward()`` in the child pushes its rollout's window as ``(num, den)`` rates;
the trainer's ``log()`` reduces them (``async_grpo_trainer.py`` around lines 81 and 1698).
The log holds each environment's figures and tools, and each pooled figure is the mean of
the environments' weighted by their share of the rollouts.

With one rollout in flight (``max_inflight_tasks=1``), fixed-count micro-batches
(``token_budget=0``) of one block's samples and no stale drops, every optimizer step trains
on exactly one block: its rollouts split 3:1 (docs/several-environments.md)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

import ors_server

pytest.importorskip("trl")
pytest.importorskip("tokenizers")
pytest.importorskip("aiohttp")

from async_trainer import NoWeightSync, cpu_config, on_cpu, tiny_model_for, train  # noqa: E402
from envs.coin_echo_support import COIN_ECHO_ENV, ScoredCoinEchoAdapter  # noqa: E402
from envs.trust_support import TRUST_ENV, ScoredTrustAdapter, TrustAdapter  # noqa: E402
from standin_vllm import StandinVLLM, echo_tokenizer  # noqa: E402

from orsgen import bundle_tasks  # noqa: E402

ENVS = ("coin", "trust")
WORDS = ["apple", "banana", "cherry", "damson", "elder", "fig", *[f"t{i}" for i in range(20)]]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_async_grpo_logs_every_figure_per_environment(
    ors_servers: ors_server.Servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch
    from trl.experimental.async_grpo import AsyncGRPOTrainer

    torch.set_num_threads(1)
    on_cpu(monkeypatch)
    trust, coin = ors_servers.own(TRUST_ENV), ors_servers.own(COIN_ECHO_ENV)
    try:
        probe = TrustAdapter(base_url=trust.url)  # no I/O: its tool methods
        tokenizer = echo_tokenizer([probe.echo, probe.hint], WORDS)
        model = tiny_model_for(tokenizer, tmp_path / "model")
        data = bundle_tasks(
            {"trust": None, "coin": None}, weights={"trust": 3, "coin": 1}, block=4, blocks=4
        )
        with StandinVLLM(tokenizer) as generator:
            args = cpu_config(
                tmp_path / "out",
                generator.url,
                max_steps=4,
                per_device_train_batch_size=4 * 2,  # one block's rows times num_generations
                token_budget=0,  # TRL's fixed-count micro-batches, one a step
                max_inflight_tasks=1,  # groups reach the queue in the dataset's order
                max_staleness=4,  # = max_steps: no sample is ever dropped as stale
                save_strategy="no",
            )
            trainer = AsyncGRPOTrainer(
                model=str(model),
                args=args,
                processing_class=tokenizer,
                train_dataset=data,
                environment_factory={
                    "trust": functools.partial(ScoredTrustAdapter, base_url=trust.url),
                    "coin": functools.partial(ScoredCoinEchoAdapter, base_url=coin.url),
                },
                weight_transfer=NoWeightSync(),
            )
            collated = record_micro_batches(monkeypatch)
            train(trainer)
    finally:
        trust.stop()
        coin.stop()

    logged = [h for h in trainer.state.log_history if "ors/scored_frac" in h]
    assert logged, trainer.state.log_history
    for env in ENVS:  # each environment's figures and tools (trust's hint too, never called)
        for key in ("scored_frac", "rollout_frac", "tool/echo/calls_per_rollout", "pass@1"):
            assert any(f"ors/{env}/{key}" in h for h in logged), (env, key)
    assert any("ors/trust/tool/hint/calls_per_rollout" in h for h in logged)
    assert not any(k.startswith("ors/tool/") for h in logged for k in h)
    for entry in logged:
        shares = {e: entry.get(f"ors/{e}/rollout_frac", 0.0) for e in ENVS}
        assert sum(shares.values()) == pytest.approx(1.0), entry
        used = [e for e in ENVS if shares[e] > 0]
        for figure in ("scored_frac", "failed_frac", "finished_frac", "calls_per_rollout"):
            weighted = sum(shares[e] * entry[f"ors/{e}/{figure}"] for e in used)
            assert entry[f"ors/{figure}"] == pytest.approx(weighted), (figure, entry)
    # The logged shares are of the rollouts scored since the last log: the child runs ahead
    # of the trainer, so they need not be 3:1 per step. What each step trains is, exactly.
    print({e: [h.get(f"ors/{e}/rollout_frac") for h in logged] for e in ENVS})
    steps = [h for h in trainer.state.log_history if "batch/samples_per_step" in h]
    assert [h["batch/samples_per_step"] for h in steps] == [8.0] * 4, steps
    assert not any("sample/dropped_stale_total" in h for h in trainer.state.log_history)
    assert len(collated) >= 4, collated  # one micro-batch a step (and one prefetched)
    for block, group_ids in enumerate(collated):
        rows = sorted(set(group_ids))  # a group id counts the dataset's rows in order
        assert rows == list(range(4 * block, 4 * block + 4)), (block, collated)
        envs = [data[g % len(data)]["environment"] for g in group_ids]
        assert (envs.count("trust"), envs.count("coin")) == (6, 2), (block, envs)


def record_micro_batches(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """The group id of every sample in each micro-batch TRL's collator packs, in order."""
    from trl.experimental.async_grpo.async_grpo_trainer import DataCollatorForRollout

    collated: list[list[int]] = []
    pack = DataCollatorForRollout.torch_call

    def recording(self: DataCollatorForRollout, examples: list[object]) -> object:
        (rows,) = examples
        collated.append([s["group_id"] for row in rows for s in row.samples])  # type: ignore[attr-defined]
        return pack(self, examples)

    monkeypatch.setattr(DataCollatorForRollout, "torch_call", recording)
    return collated

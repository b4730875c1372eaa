"""A real ``AsyncGRPOTrainer(...).train()`` on this machine's CPU: TRL's trainer loop,
checkpoints and resume, its ``AsyncRolloutWorker`` spawning the rollout child, against the
stand-in generation server (tests/standin_vllm.py) and a real ORS server.

AsyncGRPO is written for GPUs; four of its pieces cannot run here, and each is replaced by
the smallest thing that does the same job on a CPU (trl 1.16, this venv):

- ``get_peak_flops_per_device`` (``trainer/utils.py``) calls ``torch.cuda.get_device_name``
  in ``AsyncGRPOTrainer.__init__``: a CPU torch raises "Torch not compiled with CUDA". It
  answers ``None`` here, which TRL reads as "peak FLOPs unknown: no MFU metric".
- ``AsyncRolloutWorker.__init__`` refuses without the ``vllm`` package, which it never
  imports: the child only speaks HTTP to the server. The check answers True here.
- The training forward uses tree attention, the flash-attn3 kernel fetched from the Hub by
  the ``kernels`` package (GPU only; no network here). :func:`cpu_tree_attention` computes
  the same varlen causal attention with torch's SDPA, one packed sequence at a time, and
  is registered under TRL's name after the trainer registered its own.
- Weight sync to vLLM goes over NCCL. :class:`NoWeightSync` is the no-op
  ``weight_transfer=`` TRL's docstring offers "to disable trainer-side weight sync" (the
  stand-in serves no weights anyway); the trainer still pauses, syncs and bumps the model
  version as it does on a GPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


def cpu_tree_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    *,
    tree_kv_index: Any,
    tree_cu_seqlens_q: Any,
    tree_cu_seqlens_k: Any,
    tree_max_seqlen_q: Any,
    tree_max_seqlen_k: Any,
    scaling: float | None = None,
    sliding_window: int | None = None,
    softcap: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """``trl.experimental.async_grpo.packing.tree_attention`` with flash-attn's varlen
    contract (causal aligned to the end of each key range) computed by SDPA."""
    import torch

    if sliding_window or softcap:
        raise NotImplementedError("the tiny test model uses neither")
    q, k, v = (x.transpose(1, 2)[0] for x in (query, key, value))
    k, v = k.index_select(0, tree_kv_index), v.index_select(0, tree_kv_index)
    repeat = q.shape[1] // k.shape[1]  # grouped-query attention
    cq, ck = tree_cu_seqlens_q.tolist(), tree_cu_seqlens_k.tolist()
    out = []
    for i in range(len(cq) - 1):
        qs = q[cq[i] : cq[i + 1]].transpose(0, 1)
        ks = k[ck[i] : ck[i + 1]].repeat_interleave(repeat, 1).transpose(0, 1)
        vs = v[ck[i] : ck[i + 1]].repeat_interleave(repeat, 1).transpose(0, 1)
        lq, lk = qs.shape[1], ks.shape[1]
        mask = torch.ones(lq, lk, dtype=torch.bool).tril(lk - lq)
        attended = torch.nn.functional.scaled_dot_product_attention(
            qs, ks, vs, attn_mask=mask, scale=scaling
        )
        out.append(attended.transpose(0, 1))
    return torch.cat(out).unsqueeze(0), None


class NoWeightSync:
    """TRL's ``WeightTransferProtocol``, syncing nothing (no NCCL, no vLLM here)."""

    def __init__(self) -> None:
        self.sent = 0

    def init_weight_transfer(self) -> None:
        pass

    def pause(self) -> None:
        pass

    def send_weights(self, iterator: Iterator[tuple[str, Any]]) -> None:
        for _ in iterator:  # the trainer's own parameter stream, consumed
            pass
        self.sent += 1

    def resume(self) -> None:
        pass

    def destroy(self) -> None:
        pass


def on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let ``AsyncGRPOTrainer`` be constructed on a CPU (the two checks above)."""
    import trl.experimental.async_grpo.async_grpo_trainer as trainer_module
    import trl.experimental.async_grpo.async_rollout_worker as worker_module

    monkeypatch.setattr(trainer_module, "get_peak_flops_per_device", lambda *_: None)
    monkeypatch.setattr(worker_module, "is_vllm_available", lambda *_, **__: True)


def train(trainer: Any, **kwargs: Any) -> Any:
    """``trainer.train(**kwargs)`` with the CPU tree attention (registered after the
    trainer's ``__init__`` registered the GPU one under the same name)."""
    from transformers import AttentionInterface
    from trl.experimental.async_grpo.packing import TREE_ATTENTION

    AttentionInterface.register(TREE_ATTENTION, cpu_tree_attention)
    return trainer.train(**kwargs)


def tiny_model_for(tokenizer: Any, directory: Any) -> Any:
    """examples/tiny_model.py's untrained model for ``tokenizer``, saved with it in
    ``directory`` (what ``AsyncGRPOTrainer(model=...)`` loads); ``directory``."""
    import tiny_model

    model = tiny_model.build_model(len(tokenizer), tokenizer.pad_token_id, tokenizer.eos_token_id)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def cpu_config(output_dir: Any, generator_url: str, **overrides: Any) -> Any:
    """The ``AsyncGRPOConfig`` of these tests: the tiny model on a CPU against the
    stand-in generation server at ``generator_url``, one log entry a step; ``overrides``
    win."""
    from trl.experimental.async_grpo import AsyncGRPOConfig

    settings: dict[str, Any] = dict(
        output_dir=str(output_dir),
        num_generations=2,
        per_device_train_batch_size=2,
        max_completion_length=64,
        max_tool_calling_iterations=2,
        token_budget=256,  # else read from vLLM's /v1/models
        vllm_server_base_url=generator_url,
        use_cpu=True,
        bf16=False,
        report_to="none",
        logging_steps=1,
        seed=0,
    )
    return AsyncGRPOConfig(**{**settings, **overrides})

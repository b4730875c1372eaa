"""A real vision-language GRPOTrainer.train() on CPU. A tiny local
Qwen3-VL (tests/tiny_vlm.py) trains 2 steps against a real ORS server whose prompt
carries an image, through a generated adapter with ``multimodal=True``. Asserted: the
image reached the model's forward pass as ``pixel_values`` and image tokens, and the
rewards came back (graded through the environment's @terminal tool)."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ors_server
from conftest import ENVS, served_package

pytest.importorskip("trl")
pytest.importorskip("PIL")

VLM_ENV = ENVS / "vlm_env.py"


@pytest.fixture()
def served(
    ors_servers: ors_server.Servers, tmp_path: Path
) -> Iterator[tuple[Any, ors_server.RunningServer]]:
    module, server = served_package(ors_servers, VLM_ENV, tmp_path / "vlm_pkg")
    try:
        yield module, server
    finally:
        module.VlmEnv.close_all()


def _corpus(env: Any) -> list[str]:
    """Conversations rendered through TRL's qwen3_vl template, to train the tokenizer on."""
    from transformers.utils import chat_template_utils
    from trl.chat_template_utils import qwen3_vl_chat_template

    render: Any = chat_template_utils.render_jinja_template
    convo = [
        {"role": "user", "content": [{"type": "text", "text": "Colour?"}, {"type": "image"}]},
        {"role": "assistant", "content": "red"},
    ]
    rendered, _ = render(
        conversations=[convo], tools=[env.look], chat_template=qwen3_vl_chat_template
    )
    return list(rendered) * 4


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_vlm_grpo_sees_the_environment_image_and_gets_rewards(served, tmp_path: Path) -> None:
    import torch
    from trl import GRPOTrainer

    import tiny_model
    import tiny_vlm

    torch.set_num_threads(1)
    module, server = served
    factory = functools.partial(module.VlmEnv, base_url=server.url, multimodal=True)
    processor, model_dir = tiny_vlm.build(tmp_path / "tiny_vlm", _corpus(factory()))

    returned: list[float | None] = []

    def recording_reward(environments: Any, **kwargs: Any) -> list[float | None]:
        rewards = module.outcome_reward(environments, **kwargs)
        returned.extend(rewards)
        return rewards

    recording_reward.__name__ = "outcome_reward"
    trainer = GRPOTrainer(
        model=str(model_dir),
        processing_class=processor,
        args=tiny_model.cpu_grpo_config(tmp_path / "out", max_steps=2),
        train_dataset=module.load_tasks(base_url=server.url),
        environment_factory=factory,
        reward_funcs=recording_reward,
    )
    seen: list[dict[str, Any]] = []
    image_token = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")

    def record(_module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        pixels, ids = kwargs.get("pixel_values"), kwargs.get("input_ids")
        seen.append(
            {
                "pixel_values": None if pixels is None else tuple(pixels.shape),
                "image_tokens": 0 if ids is None else int((ids == image_token).sum()),
            }
        )

    hook = trainer.model.register_forward_pre_hook(record, with_kwargs=True)
    started = time.perf_counter()
    try:
        trainer.train()
    finally:
        hook.remove()
    took = time.perf_counter() - started
    with_pixels = [s for s in seen if s["pixel_values"] is not None]
    print(
        f"\ntrain() {took:.1f} s; forwards {len(seen)}, with pixel_values {len(with_pixels)}: "
        f"{with_pixels[:2]}; rewards {returned}"
    )
    assert with_pixels and all(s["image_tokens"] > 0 for s in with_pixels), seen
    assert len(returned) == 4 and all(r in (0.0, 1.0) for r in returned), returned
    assert server.requests().get("POST /vlmenv/call", 0) >= 4  # the terminal submits

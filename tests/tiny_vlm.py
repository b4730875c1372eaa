"""A tiny, local Qwen3-VL for CPU tests (no hub): a BPE tokenizer trained on rendered
conversations, a PIL image processor, and a ~230k-parameter random
``Qwen3VLForConditionalGeneration`` (recipe: /work/shared/E2E_CPU.md, "Vision-language
models on CPU")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PAD, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
VISION = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
ADDED = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
]


def processor_class() -> Any:
    from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor

    class ImageOnlyQwen3VLProcessor(Qwen3VLProcessor):  # type: ignore[misc]
        """Qwen3VLProcessor without a video processor (none can be built without torchvision)."""

        @classmethod
        def get_attributes(cls) -> list[str]:
            return ["image_processor", "tokenizer"]

        def __init__(self, image_processor: Any = None, tokenizer: Any = None, **kw: Any) -> None:
            kw.pop("video_processor", None)
            super().__init__(image_processor, tokenizer, video_processor=None, **kw)

    return ImageOnlyQwen3VLProcessor


def build(out_dir: Path, corpus: Sequence[str], seed: int = 0) -> tuple[Any, Path]:
    """Return (processor, model directory)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3VLConfig, Qwen3VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
    from trl.chat_template_utils import qwen3_vl_chat_template

    torch.manual_seed(seed)
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    specials = [PAD, IM_START, IM_END, *VISION]
    trainer = trainers.BpeTrainer(
        vocab_size=1024 - len(ADDED),
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    splitter = re.compile("|".join(re.escape(t) for t in specials + ADDED))
    core.train_from_iterator([p for t in corpus for p in splitter.split(t) if p], trainer=trainer)
    tok: Any = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=PAD,
        eos_token=IM_END,
        additional_special_tokens=[IM_START, *VISION],
        padding_side="left",
        chat_template=qwen3_vl_chat_template,
    )
    tok.add_tokens(ADDED)
    image_processor = Qwen2VLImageProcessorPil(
        patch_size=16,
        merge_size=2,
        temporal_patch_size=2,
        min_pixels=32 * 32,
        max_pixels=64 * 64,
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )
    processor = processor_class()(
        image_processor=image_processor, tokenizer=tok, chat_template=qwen3_vl_chat_template
    )
    ids = {t: tok.convert_tokens_to_ids(t) for t in VISION}
    config = Qwen3VLConfig(
        text_config=dict(
            vocab_size=len(tok),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=2048,
            rope_scaling={
                "rope_type": "default",
                "mrope_section": [2, 3, 3],
                "mrope_interleaved": True,
            },
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
            bos_token_id=None,
        ),
        vision_config=dict(
            depth=2,
            hidden_size=32,
            intermediate_size=64,
            num_heads=2,
            out_hidden_size=64,
            patch_size=16,
            spatial_merge_size=2,
            temporal_patch_size=2,
            deepstack_visual_indexes=[0],
            num_position_embeddings=16,
        ),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )
    model = Qwen3VLForConditionalGeneration(config)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    return processor, out_dir

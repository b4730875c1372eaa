"""Fine-tune a model with TRL's SFTTrainer on what ``orsgen sft`` exported: the passing
rollouts of evaluation runs (rejection-sampling fine-tuning), so a model that rarely
passes starts GRPO with groups that differ. TRL's script conventions (``trl sft``):

    orsgen sft runs/demo/eval/train/before -o runs/demo/sft-data
    python examples/sft.py --config examples/recipes/sft.yaml \\
        --model_name_or_path runs/demo/model-before --dataset_path runs/demo/sft-data

Every SFTConfig and ModelConfig flag works (``--use_peft --lora_r 16`` for LoRA through
peft), from the YAML or the command line (which wins). The rows are TRL's conversational
tool-calling format with a ``tools`` column, which SFTTrainer renders through the model's
chat template. Without a GPU the script defaults to ``use_cpu``, no bf16 and no activation
checkpointing (the YAML and flags still win). At the end it saves the model to
``output_dir`` and prints one line.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
sys.path.insert(0, str(HERE))

from grpo import cpu_defaults, model_init_kwargs  # noqa: E402


@dataclass
class SftArguments:
    """orsgen's argument of the SFT recipe (beside SFTConfig and ModelConfig)."""

    dataset_path: str = field(
        default="runs/demo/sft-data",
        metadata={"help": "the dataset `orsgen sft -o` wrote (datasets.load_from_disk)"},
    )


def main(sft_args: SftArguments, training_args: Any, model_args: Any) -> dict[str, Any]:
    from trl import SFTTrainer  # type: ignore[attr-defined]

    return fine_tune(SFTTrainer, sft_args.dataset_path, training_args, model_args)


def fine_tune(
    trainer_class: Any, dataset_path: str, training_args: Any, model_args: Any
) -> dict[str, Any]:
    """Train ``trainer_class`` (SFTTrainer, DPOTrainer) on the dataset at ``dataset_path``,
    save the model and print one line (``sft: ...``, ``dpo: ...``)."""
    import datasets
    import torch
    from trl import get_peft_config  # type: ignore[attr-defined]

    if training_args.use_cpu:
        torch.set_num_threads(1)  # two threads oversubscribe a small CPU
    dataset = datasets.load_from_disk(dataset_path)
    training_args.model_init_kwargs = model_init_kwargs(training_args, model_args)
    trainer = trainer_class(
        model=model_args.model_name_or_path,
        args=training_args,
        train_dataset=dataset,
        peft_config=get_peft_config(model_args),
    )
    trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    model = trainer.accelerator.unwrap_model(trainer.model)
    model.config.use_cache = True  # the Trainer turned the KV cache off for training
    trainer.save_model(training_args.output_dir)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    first, last = (losses[0], losses[-1]) if losses else (math.nan, math.nan)
    name = trainer_class.__name__.removesuffix("Trainer").lower()
    trainer.accelerator.print(
        f"{name}: {dataset.num_rows} rows, {trainer.state.global_step} steps; loss {first:.3f} "
        f"at the first logged step, {last:.3f} at the last; model in {training_args.output_dir}"
    )
    return {"rows": dataset.num_rows, "steps": trainer.state.global_step, "losses": losses}


def make_parser() -> Any:
    from trl import ModelConfig, SFTConfig, TrlParser  # type: ignore[attr-defined]

    parser = TrlParser((SftArguments, SFTConfig, ModelConfig))
    parser.set_defaults_with_config(**cpu_defaults())
    return parser


if __name__ == "__main__":
    parsed = make_parser().parse_args_and_config()
    main(*parsed)

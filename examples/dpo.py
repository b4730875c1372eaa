"""Train a model with TRL's DPOTrainer on what ``orsgen pairs`` exported: for each task of
evaluation runs, a passing rollout (chosen) beside a non-passing one (rejected) of the same
prompt. TRL's script conventions (``trl dpo``):

    orsgen pairs runs/demo/eval/train/before -o runs/demo/pairs-data
    python examples/dpo.py --config examples/recipes/dpo.yaml \\
        --model_name_or_path runs/demo/model-before --dataset_path runs/demo/pairs-data

Every DPOConfig and ModelConfig flag works (``--use_peft --lora_r 16`` for LoRA through
peft; the reference model is then the adapter-free base), from the YAML or the command line
(which wins). The rows are TRL's conversational preference format with a ``tools`` column,
which DPOTrainer renders through the model's chat template. Without a GPU the script
defaults to ``use_cpu``, no bf16 and no activation checkpointing (the YAML and flags still
win). At the end it saves the model to ``output_dir`` and prints one line.
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
class DpoArguments:
    """orsgen's argument of the DPO recipe (beside DPOConfig and ModelConfig)."""

    dataset_path: str = field(
        default="runs/demo/pairs-data",
        metadata={"help": "the dataset `orsgen pairs -o` wrote (datasets.load_from_disk)"},
    )


def main(dpo_args: DpoArguments, training_args: Any, model_args: Any) -> dict[str, Any]:
    import datasets
    import torch
    from trl import DPOTrainer, get_peft_config  # type: ignore[attr-defined]

    if training_args.use_cpu:
        torch.set_num_threads(1)  # two threads oversubscribe a small CPU
    dataset = datasets.load_from_disk(dpo_args.dataset_path)
    training_args.model_init_kwargs = model_init_kwargs(training_args, model_args)
    trainer = DPOTrainer(
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
    trainer.accelerator.print(
        f"dpo: {dataset.num_rows} pairs, {trainer.state.global_step} steps; loss {first:.3f} "
        f"at the first logged step, {last:.3f} at the last; model in {training_args.output_dir}"
    )
    return {"rows": dataset.num_rows, "steps": trainer.state.global_step, "losses": losses}


def make_parser() -> Any:
    from trl import DPOConfig, ModelConfig, TrlParser  # type: ignore[attr-defined]

    parser = TrlParser((DpoArguments, DPOConfig, ModelConfig))
    parser.set_defaults_with_config(**cpu_defaults())
    return parser


if __name__ == "__main__":
    parsed = make_parser().parse_args_and_config()
    main(*parsed)

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

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
sys.path.insert(0, str(HERE))

from grpo import cpu_defaults  # noqa: E402
from sft import fine_tune  # noqa: E402


@dataclass
class DpoArguments:
    """orsgen's argument of the DPO recipe (beside DPOConfig and ModelConfig)."""

    dataset_path: str = field(
        default="runs/demo/pairs-data",
        metadata={"help": "the dataset `orsgen pairs -o` wrote (datasets.load_from_disk)"},
    )


def main(dpo_args: DpoArguments, training_args: Any, model_args: Any) -> dict[str, Any]:
    from trl import DPOTrainer  # type: ignore[attr-defined]

    return fine_tune(DPOTrainer, dpo_args.dataset_path, training_args, model_args)


def make_parser() -> Any:
    from trl import DPOConfig, ModelConfig, TrlParser  # type: ignore[attr-defined]

    parser = TrlParser((DpoArguments, DPOConfig, ModelConfig))
    parser.set_defaults_with_config(**cpu_defaults())
    return parser


if __name__ == "__main__":
    parsed = make_parser().parse_args_and_config()
    main(*parsed)

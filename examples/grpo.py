"""Train a model with TRL's GRPOTrainer on an ORS environment, through a generated orsgen
package: TRL's script conventions (``trl grpo``, open-r1's recipes), with orsgen's own
arguments beside TRL's.

    python examples/grpo.py --config examples/recipes/grpo.yaml \\
        --model_name_or_path runs/demo/model-before --base_url http://127.0.0.1:8080

Every GRPOConfig and ModelConfig flag works (``--learning_rate``, ``--num_generations``,
``--use_peft --lora_r 16`` for LoRA through peft, ``--use_vllm`` ...), from the YAML or the
command line (which wins). orsgen's arguments (:class:`OrsgenArguments`):

- ``package``: the generated package directory (``generated/echo``), ``env_class`` when it
  has several adapters;
- ``base_url``: the ORS server (else the package's own, or ``OPENREWARD_SESSION_URL``);
- ``split``: the training split; ``eval_split``: TRL's in-training evaluation on
  ``load_tasks(split=...)`` (with ``eval_strategy: steps``);
- ``dataset``: ``rows`` (``train_dataset=load_tasks(split)``) or ``environment``
  (``train_dataset=None``: the adapter chooses every group's task);
- ``curriculum``: ``uniform`` or ``pass_rate`` (``dataset: environment`` only), and
  ``prior``: evaluation run directories (``orsgen eval --out``) whose per-task pass rates
  start the curriculum, so its first pass over the tasks is skipped.

The trainer gets orsgen's ``CurriculumCheckpoint`` (the curriculum's state in every
checkpoint, so ``--resume_from_checkpoint`` continues it) and ``TaskTableCallback``
(``ors_tasks.csv``, the per-task table, in ``output_dir``). Without a GPU the script
defaults to ``use_cpu``, no bf16 and no activation checkpointing (the YAML and the command
line still win), so one recipe runs unchanged on a laptop and on a GPU node; on several
GPUs launch it with ``accelerate launch --config_file ...`` (docs/recipes.md). At the end it
saves the model to ``output_dir``, writes ``steps.csv`` (reward, coverage, grad norm per
step) there and prints one line.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
for _var, _value in {
    "TRL_EXPERIMENTAL_SILENCE": "1",
    "OPENREWARD_DISABLE_UPDATE_CHECK": "1",
}.items():
    os.environ.setdefault(_var, _value)
sys.path.insert(0, str(HERE))


@dataclass
class OrsgenArguments:
    """orsgen's arguments of a training recipe (beside GRPOConfig and ModelConfig)."""

    package: str = field(
        default="generated/echo", metadata={"help": "the generated package directory"}
    )
    env_class: str | None = field(
        default=None, metadata={"help": "the adapter class, when the package has several"}
    )
    base_url: str | None = field(
        default=None, metadata={"help": "ORS server URL (default: the package's own)"}
    )
    split: str | None = field(
        default=None, metadata={"help": "training split (default: the package's)"}
    )
    dataset: str = field(
        default="rows",
        metadata={
            "help": "rows: train_dataset=load_tasks(split); environment: train_dataset=None, "
            "the adapter chooses each group's task",
            "choices": ["rows", "environment"],
        },
    )
    curriculum: str = field(
        default="uniform",
        metadata={
            "help": "task choice with dataset=environment",
            "choices": ["uniform", "pass_rate"],
        },
    )
    prior: list[str] | None = field(
        default=None,
        metadata={"help": "orsgen eval run directories that start the pass_rate curriculum"},
    )
    eval_split: str | None = field(
        default=None,
        metadata={"help": "split for TRL's in-training evaluation (with eval_strategy)"},
    )


def cpu_defaults() -> dict[str, Any]:
    """What a machine without a GPU needs: TRL turns bf16 and activation checkpointing on by
    default, and neither makes sense on a CPU. Defaults only: the YAML and flags win."""
    import torch

    if torch.cuda.is_available():
        return {}
    return {"use_cpu": True, "bf16": False, "activation_checkpointing": False}


def load_package(directory: str, env_class: str | None) -> tuple[Any, Any, Any]:
    """The adapter class, ``load_tasks`` and ``outcome_reward`` of a generated package."""
    from orsgen import load_adapter

    klass = load_adapter(directory, env_class)
    package = sys.modules[klass.__module__.rpartition(".")[0]]
    return klass, package.load_tasks, package.outcome_reward


def adapter_settings(args: OrsgenArguments) -> dict[str, Any]:
    """The adapter's keywords: the server, the split and, with ``dataset=environment``,
    how it chooses tasks."""
    settings: dict[str, Any] = {}
    if args.base_url:
        settings["base_url"] = args.base_url
    if args.split:
        settings["split"] = args.split
    if args.dataset == "rows":
        if args.curriculum != "uniform" or args.prior:
            raise SystemExit(
                "error: curriculum and prior choose tasks for dataset=environment; with "
                "dataset=rows the dataset's rows are the tasks"
            )
        return settings
    if args.curriculum == "pass_rate":
        from orsgen import PassRateCurriculum

        settings["curriculum"] = (
            PassRateCurriculum(prior=args.prior) if args.prior else PassRateCurriculum()
        )
    elif args.prior:
        raise SystemExit("error: a prior starts the pass_rate curriculum: add curriculum=pass_rate")
    return settings


def model_init_kwargs(training_args: Any, model_args: Any) -> dict[str, Any]:
    """How the trainer loads the model, as TRL's own scripts build it from ModelConfig."""
    kwargs = {
        "revision": model_args.model_revision,
        "trust_remote_code": training_args.trust_remote_code,
        "attn_implementation": model_args.attn_implementation,
        "dtype": model_args.dtype,
    }
    return {**kwargs, **(training_args.model_init_kwargs or {})}


def main(orsgen_args: OrsgenArguments, training_args: Any, model_args: Any) -> dict[str, Any]:
    import torch
    from trl import GRPOTrainer, get_peft_config  # type: ignore[attr-defined]

    from orsgen import CurriculumCheckpoint, TaskTableCallback

    if training_args.use_cpu:
        torch.set_num_threads(1)  # two threads oversubscribe a small CPU
    # TRL 1.16 itself reads transformers' deprecated `is_gradient_checkpointing` on every
    # generation (trl/models/utils.py); nothing here asks for it, so silence only that one.
    warnings.filterwarnings(
        "ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning
    )
    klass, load_tasks, outcome_reward = load_package(orsgen_args.package, orsgen_args.env_class)
    settings = adapter_settings(orsgen_args)
    task_args = {"base_url": orsgen_args.base_url} if orsgen_args.base_url else {}
    train_dataset = None
    if orsgen_args.dataset == "rows":
        train_dataset = load_tasks(split=orsgen_args.split or klass.DEFAULT_SPLIT, **task_args)
    eval_dataset = None
    if orsgen_args.eval_split and training_args.eval_strategy != "no":
        eval_dataset = load_tasks(split=orsgen_args.eval_split, **task_args)
    training_args.model_init_kwargs = model_init_kwargs(training_args, model_args)
    trainer = GRPOTrainer(
        model=model_args.model_name_or_path,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        environment_factory=functools.partial(klass, **settings),
        reward_funcs=outcome_reward,
        peft_config=get_peft_config(model_args),
        callbacks=[CurriculumCheckpoint(), TaskTableCallback()],
    )
    try:
        trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    finally:
        klass.close_all()  # TRL never closes the environments it pools
    save(trainer, model_args.model_name_or_path, training_args.output_dir)
    return report(trainer, Path(training_args.output_dir))


def save(trainer: Any, model_name: str, out: str) -> None:
    """The trained weights (a LoRA adapter with ``--use_peft``) with the tokenizer as it
    was given: TRL's copy carries the response schema it parses tool calls with, and a
    server that loads it would parse the trained model's calls otherwise than the given
    model's, so a before/after evaluation would differ in more than the weights."""
    from transformers import AutoTokenizer

    model = trainer.accelerator.unwrap_model(trainer.model)
    model.config.use_cache = True  # the Trainer turned the KV cache off for training
    trainer.save_model(out)
    if trainer.accelerator.is_main_process:
        AutoTokenizer.from_pretrained(model_name).save_pretrained(out)


def report(trainer: Any, out: Path) -> dict[str, Any]:
    """``steps.csv`` in ``out`` and one printed line: what the run did."""
    from training_report import step_rows, summary, write_csv

    rows = step_rows(trainer.state.log_history)
    if not trainer.accelerator.is_main_process or not rows:
        return {"steps": 0.0}
    write_csv(rows, out / "steps.csv")
    figures = summary(rows, window=max(1, min(5, len(rows) // 2)))
    trainer.accelerator.print(
        f"grpo: {len(rows)} steps; reward mean {figures['first_reward']:.3f} over the first "
        f"{figures['window']:.0f}, {figures['last_reward']:.3f} over the last "
        f"{figures['window']:.0f}; grad norm > 0 on {figures['nonzero_grad_steps']:.0f} of "
        f"{len(rows)} steps; lowest coverage {figures['min_coverage']:.2f}; model and steps.csv in {out}"
    )
    return figures


def make_parser() -> Any:
    from trl import GRPOConfig, ModelConfig, TrlParser  # type: ignore[attr-defined]

    parser = TrlParser((OrsgenArguments, GRPOConfig, ModelConfig))
    parser.set_defaults_with_config(**cpu_defaults())
    return parser


if __name__ == "__main__":
    parsed = make_parser().parse_args_and_config()
    main(*parsed)

"""Train with TRL's GRPOTrainer against the echo ORS environment, on CPU, offline.

It shows the three exports of a generated orsgen package plugged into GRPOTrainer::

    from generated.echo import EchoEnv, load_tasks, outcome_reward

    GRPOTrainer(model=...,
                train_dataset=load_tasks(base_url=url),                        # datasets.Dataset
                environment_factory=functools.partial(EchoEnv, base_url=url),  # picklable factory
                reward_funcs=outcome_reward)

Run from the repository root, after ``bash scripts/install.sh``::

    python examples/train_echo.py                      # starts examples/echo_env.py on 127.0.0.1
    python examples/train_echo.py --base-url http://127.0.0.1:8080   # or use a running server

On several processes (CPU, gloo), every rank against one running server::

    python examples/echo_env.py --port 8080 &
    torchrun --nproc_per_node 2 examples/train_echo.py --base-url http://127.0.0.1:8080

There is no model hub here: the model is a ~115k-parameter Qwen3 built locally by
examples/tiny_model.py and warmed up for a second on the task, so that the two
GRPO steps show real tool calls reaching the server and real rewards.

To watch it learn (what scripts/demo.sh runs), warm it up to echo the right word
only in a share of its tries, so the rollouts of one group differ in reward::

    python examples/train_echo.py --steps 30 --right-share 0.33 --learning-rate 5e-4 \
        --group-size 4 --batch-size 16 --output-dir runs/demo

It prints one line per step as it trains (reward mean and std, scoring coverage, grad
norm) and, with --output-dir, writes the table to steps.csv, plots it to reward.png and
keeps the trainer's own output (TRL's per-step logs and warnings) in train.log there.
There too: the per-task table (ors_tasks.csv, written by orsgen's TaskTableCallback at
every logging step, printed at the end and plotted to tasks.png), and the warmed-up and
the trained model (model-before/, model-after/: weights, tokenizer and chat template,
what ``transformers serve`` and examples/eval_demo.py load).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import logging
import os
import subprocess
import sys
import tempfile
import warnings
import urllib.request
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any, TextIO

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# Offline and quiet: no model hub, no package-index update check.
for _var, _value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRL_EXPERIMENTAL_SILENCE": "1",
    "OPENREWARD_DISABLE_UPDATE_CHECK": "1",
}.items():
    os.environ.setdefault(_var, _value)

# The generated package lives in the repository (generated/echo), not in site-packages.
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from generated.echo import EchoEnv, load_tasks, outcome_reward  # noqa: E402
from serve_model import free_port, stop_process, wait_until_ready  # noqa: E402
from tiny_model import Episode, build_tiny_model, cpu_grpo_config  # noqa: E402
from training_report import (  # noqa: E402
    HEADER,
    format_row,
    format_task_table,
    read_task_table,
    step_rows,
    summary,
    write_csv,
    write_plot,
    write_task_plot,
)

ENV_NAME = "echoenv"


def start_server(log_path: Path, timeout: float = 60.0) -> tuple[subprocess.Popen[bytes], str]:
    """Serve examples/echo_env.py on 127.0.0.1 on a free port; wait until it answers."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, str(HERE / "echo_env.py"), "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "OPENREWARD_LOG_LEVEL": "WARNING"},
        )

    def answers() -> bool:
        with urllib.request.urlopen(f"{url}/{ENV_NAME}/tools", timeout=2) as resp:
            json.loads(resp.read())
        return True

    wait_until_ready(process, answers, log_path, "the echo server", timeout)
    return process, url


def warm_up_episodes(url: str, dataset: Any, right_share: float = 1.0) -> list[Episode]:
    """Read each task's real prompt and the echo tool's real answers through the adapter,
    so the tiny model is taught exactly the text the rollouts will see.

    With ``right_share`` below 1, every task is taught several times: that share of its
    episodes echo the task's own word, the others the next task's word (a wrong answer,
    which the environment scores 0.0). The model then solves each task only some of the
    time, so the rollouts of one GRPO group differ in reward and GRPO has something to
    learn from."""
    share = Fraction(right_share).limit_denominator(8)
    if not 0 < share <= 1:
        raise ValueError(f"right_share must be in (0, 1], not {right_share}")
    n_right, n_wrong = share.numerator, share.denominator - share.numerator
    targets = list(dataset["target"])
    env = EchoEnv(base_url=url)
    episodes = []
    try:
        for i, row in enumerate(dataset):
            prompt = env.reset(**row)
            right, wrong = row["target"], targets[(i + 1) % len(targets)]
            # The wrong word first: it leaves the episode open, so one session answers both.
            wrong_answer = env.echo(text=wrong) if n_wrong else ""
            right_answer = env.echo(text=right)
            episodes += [Episode(prompt, {"text": right}, right_answer)] * n_right
            episodes += [Episode(prompt, {"text": wrong}, wrong_answer)] * n_wrong
    finally:
        env.close()
    return episodes


def build_warm_model(
    url: str,
    out: Path,
    dataset: Any | None = None,
    right_share: float = 1.0,
    head_dim: int = 16,
) -> Path:
    """The tiny model, warmed up on the tasks of ``dataset`` (default: the train split) to
    echo the right word in ``right_share`` of its tries (examples/tiny_model.py);
    ``head_dim=32`` for one that vLLM's CPU build serves."""
    tools = EchoEnv(base_url=url)  # construction does no network I/O
    return build_tiny_model(
        out,
        tools=[tools.echo, tools.hint],
        episodes=warm_up_episodes(url, dataset or load_tasks(base_url=url), right_share),
        tool_name="echo",
        head_dim=head_dim,
    )


@contextlib.contextmanager
def raw_output_to(log_path: Path | None) -> Iterator[TextIO]:
    """While training, what TRL and transformers print (per-step dicts, progress bars,
    warnings with their kwargs dumps) goes to ``log_path``; yields the stream that
    still reaches the reader. With no ``log_path`` everything stays on the terminal."""
    terminal = sys.stdout
    if log_path is None:
        yield terminal
        return
    from transformers.utils import logging as hf_logging

    # transformers' handler holds the stderr it saw at import: point it at the log too.
    handlers = [h for h in hf_logging.get_logger().handlers if isinstance(h, logging.StreamHandler)]
    with log_path.open("a", encoding="utf-8") as log:
        # Swapped, not setStream(): that flushes the old stream, which may be closed by now
        # (the stderr capture of an earlier pytest test, in one process), and raises.
        streams = [h.stream for h in handlers]
        for handler in handlers:
            handler.stream = log
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                yield terminal
        finally:
            for handler, stream in zip(handlers, streams):
                handler.stream = stream


def step_lines(terminal: TextIO, total: int) -> Any:
    """A trainer callback that prints one table line per logged step as training runs."""
    from transformers import TrainerCallback

    class StepLines(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            print(f"training {total} steps; per step:\n{HEADER}", file=terminal, flush=True)

        def on_log(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            for row in step_rows([{"step": state.global_step, **(kwargs.get("logs") or {})}]):
                print(format_row(row), file=terminal, flush=True)

    return StepLines()


def save_model(trainer: Any, tokenizer_dir: Path, out: Path) -> Path:
    """The trained model as a local directory ``transformers serve`` loads: its weights,
    with the tokenizer and chat template of ``tokenizer_dir`` (the warmed-up model's).
    Not TRL's copy of the tokenizer, which carries the response template TRL parses tool
    calls with: the server would parse the trained model's calls with it and the warmed-up
    model's with its own fallback, and a comparison of the two must differ in weights only."""
    from transformers import AutoTokenizer

    model = trainer.accelerator.unwrap_model(trainer.model)
    # transformers' Trainer turns the KV cache off for training (TrainingArguments.use_cache);
    # the warmed-up model, and serving, have it on.
    model.config.use_cache = True
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(out)
    return out


def sample_when_served(model_dir: Path) -> None:
    """Make sampling the model's default, as GRPOTrainer sampled it in training:
    ``transformers serve`` decodes greedily, whatever temperature a request sends, unless
    the model's generation config says ``do_sample``; n samples of a task would then be
    one sample n times. Written after training, which never reads it."""
    from transformers import GenerationConfig

    config = GenerationConfig.from_pretrained(model_dir)
    config.do_sample = True
    config.save_pretrained(model_dir)


def _rank() -> tuple[int, int]:
    """This process's rank and the world size (torchrun sets both; 0 and 1 otherwise)."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def train(
    url: str,
    workdir: Path,
    steps: int,
    *,
    right_share: float = 1.0,
    grpo: dict[str, Any] | None = None,
    report_dir: Path | None = None,
) -> dict[str, Any]:
    """Train; print the per-step table; return what this process did: its steps, its
    per-step figures and its last batch's rewards. ``grpo`` overrides GRPOConfig fields.
    ``workdir`` is the trainer's output directory, where the per-task table
    (``ors_tasks.csv``) is written at every logging step. With ``report_dir`` the step
    table also goes to ``steps.csv`` and its plot to ``reward.png`` there, the per-task
    table is printed and plotted to ``tasks.png``, and the trained model is saved to
    ``model-after`` beside the warmed-up one (``model-before``)."""
    import torch
    from trl import GRPOTrainer  # type: ignore[attr-defined]

    from orsgen import TaskTableCallback

    torch.set_num_threads(1)  # two threads oversubscribe a 2-core machine
    # TRL 1.16 itself reads transformers' deprecated `is_gradient_checkpointing` on every
    # generation (trl/models/utils.py); nothing here asks for it, so silence only that one.
    warnings.filterwarnings(
        "ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning
    )

    train_dataset = load_tasks(base_url=url)
    print(f"dataset: {train_dataset.num_rows} tasks, columns {train_dataset.column_names}")
    log_path = report_dir / "train.log" if report_dir is not None else None
    if log_path is not None:
        log_path.write_text("")  # this run's log only
        print(f"the trainer's own output (per-step logs, warnings): {log_path}")

    with raw_output_to(log_path) as terminal:
        model_dir = build_warm_model(url, workdir / "model-before", train_dataset, right_share)
        warmup = json.loads((model_dir / "warmup.json").read_text())
        print(f"warmed-up tiny model: {model_dir} {warmup}", file=terminal, flush=True)

        args = cpu_grpo_config(workdir, max_steps=steps, **(grpo or {}))
        trainer = GRPOTrainer(
            model=str(model_dir),
            args=args,
            train_dataset=train_dataset,
            environment_factory=functools.partial(EchoEnv, base_url=url),
            reward_funcs=outcome_reward,
            callbacks=[step_lines(terminal, steps), TaskTableCallback()],
        )
        try:
            trainer.train()
            last_batch = outcome_reward(trainer.environments or [])
        finally:
            # TRL never closes the environments it pools; close_all() ends every session of
            # the class in this process (a classmethod, so TRL never offers it as a tool).
            EchoEnv.close_all()
        if report_dir is not None:
            trained_dir = save_model(trainer, model_dir, report_dir / "model-after")
            for served in (model_dir, trained_dir):
                sample_when_served(served)
            print(f"trained model: {trained_dir}", file=terminal, flush=True)

    rows = step_rows(trainer.state.log_history)
    figures = summary(rows)
    print(
        f"reward mean over the first {figures['window']:.0f} steps {figures['first_reward']:.3f}, "
        f"over the last {figures['window']:.0f} {figures['last_reward']:.3f}; "
        f"grad norm > 0 on {figures['nonzero_grad_steps']:.0f} of {len(rows)} steps"
    )
    if report_dir is not None:
        write_csv(rows, report_dir / "steps.csv")
        write_plot(rows, report_dir / "reward.png")
        print(f"table: {report_dir / 'steps.csv'}; plot: {report_dir / 'reward.png'}")
        tasks_csv = TaskTableCallback().path(args)
        tasks = read_task_table(tasks_csv)
        names = dict(enumerate(train_dataset["target"]))
        print(f"per task ({tasks_csv}):\n{format_task_table(tasks, names)}")
        write_task_plot(tasks, report_dir / "tasks.png", names)
        print(f"per-task plot: {report_dir / 'tasks.png'}")
    rank, world = _rank()
    who = f"rank {rank} of {world}: " if world > 1 else ""
    print(f"{who}rewards of this process's last batch: {last_batch}")
    return {
        "rank": rank,
        "world_size": world,
        "steps": trainer.state.global_step,
        "per_step": [dataclasses.asdict(row) for row in rows],
        "summary": figures,
        "last_batch_rewards": last_batch,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--base-url", help="a running echo ORS server (default: start one on 127.0.0.1)"
    )
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps (default: 2)")
    parser.add_argument(
        "--right-share",
        type=float,
        default=1.0,
        help="share of the warm-up episodes that echo the right word; the rest echo a wrong "
        "one, so the model starts out solving each task only that often (default: 1.0)",
    )
    parser.add_argument(
        "--learning-rate", type=float, help="GRPO's learning rate (default: TRL's, 1e-6)"
    )
    parser.add_argument(
        "--group-size", type=int, default=2, help="rollouts per GRPO group (default: 2)"
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=2,
        help="rollouts per step, a multiple of --group-size (default: 2)",
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        help="keep the trainer output here, with the per-step table (steps.csv), its plot "
        "(reward.png), the trainer's own output (train.log), the per-task table "
        "(ors_tasks.csv) and its plot (tasks.png), and the warmed-up and trained models "
        "(model-before/, model-after/)",
    )
    parser.add_argument(
        "--result-dir",
        type=Path,
        help="write rank-N.json (this process's steps, per-step figures and last-batch "
        "rewards) here",
    )
    parser.add_argument(
        "--warm-up-only",
        action="store_true",
        help="build the warmed-up model in --output-dir/model-before (sampling when served, "
        "as examples/eval_demo.py evaluates it) and stop: the start of scripts/demo.sh's loop",
    )
    opts = parser.parse_args(argv)
    if opts.warm_up_only and opts.output_dir is None:
        parser.error("--warm-up-only keeps the model in --output-dir: give one")
    rank, world = _rank()
    if world > 1 and opts.base_url is None:
        # Each rank would otherwise start a server of its own: the ranks must share one.
        parser.error(
            f"{world} processes need one shared server: start examples/echo_env.py "
            "and pass --base-url"
        )

    with tempfile.TemporaryDirectory(prefix="train-echo-") as tmp:
        workdir = (opts.output_dir or Path(tmp)) / (f"rank-{rank}" if world > 1 else "")
        workdir.mkdir(parents=True, exist_ok=True)
        server = None
        url = opts.base_url
        if url is None:
            server, url = start_server(Path(tmp) / "echo-server.log")
            print(f"echo server: {url} (pid {server.pid})")
        try:
            if opts.warm_up_only:
                model_dir = build_warm_model(
                    url.rstrip("/"), workdir / "model-before", right_share=opts.right_share
                )
                sample_when_served(model_dir)
                warmup = json.loads((model_dir / "warmup.json").read_text())
                print(f"warmed-up tiny model: {model_dir} ({warmup['steps']:.0f} steps)")
                return 0
            grpo: dict[str, Any] = {
                "num_generations": opts.group_size,
                "per_device_train_batch_size": opts.batch_size,
            }
            if opts.learning_rate is not None:
                grpo["learning_rate"] = opts.learning_rate
            result = train(
                url.rstrip("/"),
                workdir,
                opts.steps,
                right_share=opts.right_share,
                grpo=grpo,
                report_dir=workdir if opts.output_dir is not None else None,
            )
            if opts.result_dir is not None:
                opts.result_dir.mkdir(parents=True, exist_ok=True)
                (opts.result_dir / f"rank-{rank}.json").write_text(json.dumps(result))
        finally:
            if server is not None:
                stop_process(server)
                print(f"echo server stopped (pid {server.pid})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

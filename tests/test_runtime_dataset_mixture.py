"""Weighted mixtures (``bundle_tasks(..., weights=, block=, seed=)``,
orsgen/runtime/mixture.py): exact shares in every block by largest remainder, seeded
passes without replacement, and one-line errors naming the environment. No server: the
datasets are built as ``load_tasks`` builds them."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orsgen.runtime.dataset import bundle_tasks, task_rows, to_dataset
from orsgen.runtime.mixture import check_weights, plan, shares

NAMES = ["echo", "quiz", "seta", "math"]


def tasks(n: int, key: str) -> Any:
    """A ``load_tasks``-shaped dataset of ``n`` tasks with one metadata column ``key``."""
    return to_dataset(
        task_rows(list(range(n)), [{key: f"{key}{i}"} for i in range(n)], True, "train")
    )


@st.composite
def mixtures(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, Any], int]:
    """Sizes, weights (whole or fractional) and a block in which every share is at least 1."""
    names = NAMES[: draw(st.integers(1, len(NAMES)))]
    sizes = {n: draw(st.integers(1, 12)) for n in names}
    weight = st.one_of(st.integers(1, 9), st.floats(0.05, 9, allow_nan=False))
    weights = {n: draw(weight) for n in names}
    exact = check_weights(names, weights)
    least = math.ceil(sum(exact.values()) / min(exact.values()))  # every quota >= 1
    return sizes, weights, draw(st.integers(least, least + 16))


def by_block(rows: list[tuple[str, int | None]], block: int) -> list[Counter[str]]:
    return [Counter(name for name, _ in rows[i : i + block]) for i in range(0, len(rows), block)]


@settings(max_examples=150, deadline=None)
@given(mixtures(), st.integers(0, 2**31))
def test_every_block_holds_the_largest_remainder_shares(mixture: Any, seed: int) -> None:
    sizes, weights, block = mixture
    rows = plan(sizes, weights, block=block, seed=seed)
    exact = check_weights(list(sizes), weights)
    quota = {n: block * w / sum(exact.values()) for n, w in exact.items()}
    counts = shares(exact, block)
    assert sum(counts.values()) == block
    # Each share is its quota rounded down or up, and no environment rounded down has a
    # larger remainder than one rounded up: largest remainder.
    assert all(counts[n] in (math.floor(q), math.ceil(q)) for n, q in quota.items())
    up = [quota[n] - math.floor(quota[n]) for n in quota if counts[n] > quota[n]]
    down = [quota[n] - math.floor(quota[n]) for n in quota if counts[n] < quota[n]]
    assert not up or not down or min(up) >= max(down)
    assert len(rows) % block == 0
    assert all(c == Counter(counts) for c in by_block(rows, block))


@settings(max_examples=150, deadline=None)
@given(mixtures(), st.integers(0, 2**31))
def test_rows_come_in_seeded_passes_without_replacement(mixture: Any, seed: int) -> None:
    sizes, weights, block = mixture
    rows = plan(sizes, weights, block=block, seed=seed)
    assert rows == plan(sizes, weights, block=block, seed=seed)  # seeded: the same again
    counts = shares(check_weights(list(sizes), weights), block)
    for name, n in sizes.items():
        drawn = [i for env, i in rows if env == name]
        # Every pass is each row once (the last may be cut short, never repeating a row).
        for at in range(0, len(drawn), n):
            chunk = drawn[at : at + n]
            assert len(set(chunk)) == len(chunk) and set(chunk) <= set(range(n))
        assert set(drawn) == set(range(n))  # the default length shows every task
    # ... and it is the fewest blocks that do.
    assert len(rows) // block == max(math.ceil(n / counts[name]) for name, n in sizes.items())


def test_a_seed_changes_the_order_and_not_the_shares() -> None:
    sizes, weights = {"echo": 40, "quiz": 40}, {"echo": 3, "quiz": 1}
    one, other = (plan(sizes, weights, block=8, seed=s) for s in (0, 1))
    assert one != other
    assert by_block(one, 8) == by_block(other, 8) == [Counter(echo=6, quiz=2)] * 20


def test_shares_round_by_largest_remainder() -> None:
    # 10 rows at 1:1:1 are 3.33 each: the extra row goes by the mapping's order on a tie.
    assert shares({"a": Fraction(1), "b": Fraction(1), "c": Fraction(1)}, 10) == {
        "a": 4,
        "b": 3,
        "c": 3,
    }
    # 0.45:0.35:0.2 of 9 are 4.05, 3.15, 1.8: the extra row goes to the largest remainder,
    # not to the largest weight or the first environment.
    exact = check_weights(["b", "c", "a"], {"b": 0.45, "c": 0.35, "a": 0.2})
    assert shares(exact, 9) == {"b": 4, "c": 3, "a": 2}
    # A tie between remainders goes to the larger weight.
    assert shares({"small": Fraction(1), "big": Fraction(3)}, 2) == {"small": 0, "big": 2}


def test_a_small_environment_repeats_a_large_one_is_sampled() -> None:
    bundle = bundle_tasks(
        {"echo": tasks(2, "target"), "quiz": tasks(9, "question")},
        weights={"echo": 3, "quiz": 1},
        block=4,
        seed=7,
    )
    # quiz's 9 tasks at 1 a block: 9 blocks, in which echo's 2 tasks come 27 times.
    assert len(bundle) == 36
    envs = bundle["environment"]
    assert [envs[i : i + 4].count("echo") for i in range(0, 36, 4)] == [3] * 9
    quiz = [t for e, t in zip(envs, bundle["task_index"]) if e == "quiz"]
    assert sorted(quiz) == list(range(9))
    echo = [t for e, t in zip(envs, bundle["task_index"]) if e == "echo"]
    assert all(sorted(echo[i : i + 2]) == [0, 1] for i in range(0, 26, 2))
    # Each row keeps its own task's metadata and None for the other environment's columns.
    for row in bundle:
        key, other = (
            ("target", "question") if row["environment"] == "echo" else ("question", "target")
        )
        assert row[key] == f"{key}{row['task_index']}" and row[other] is None
        assert row["split"] == "train"


def test_blocks_sets_the_length_and_an_environment_may_choose_its_own_tasks() -> None:
    bundle = bundle_tasks(
        {"echo": tasks(4, "target"), "quiz": None},
        weights={"echo": 1, "quiz": 1},
        block=2,
        blocks=5,
    )
    assert len(bundle) == 10
    owned = [row for row in bundle if row["environment"] == "quiz"]
    assert len(owned) == 5
    # No task, no split: reset() gets none, so the quiz adapter chooses (train_dataset=None).
    assert all(
        r["task_index"] is None and r["split"] is None and r["target"] is None for r in owned
    )
    assert all(r["prompt"] == [{"role": "user", "content": ""}] for r in owned)
    with pytest.raises(ValueError, match="pass blocks="):
        bundle_tasks({"quiz": None}, weights={"quiz": 1}, block=2)


def test_an_environment_choosing_its_tasks_is_refused_across_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(ValueError) as caught:
        bundle_tasks(
            {"echo": tasks(4, "target"), "quiz": None}, weights={"echo": 1, "quiz": 1}, block=2
        )
    assert "'quiz'" in str(caught.value) and "2 processes" in str(caught.value)
    # With datasets, several processes are fine: every row names its task.
    both = {"echo": tasks(4, "target"), "quiz": tasks(2, "question")}
    assert len(bundle_tasks(both, weights={"echo": 1, "quiz": 1}, block=2)) == 8


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"weights": {"echo": 0, "quiz": 1}}, "weights['echo'] must be a positive number, got 0"),
        ({"weights": {"echo": 3, "quiz": -1}}, "weights['quiz'] must be a positive number, got -1"),
        (
            {"weights": {"echo": "3", "quiz": 1}},
            "weights['echo'] must be a positive number, got '3'",
        ),
        ({"weights": {"echo": True, "quiz": 1}}, "weights['echo'] must be a positive number"),
        ({"weights": {"echo": float("inf"), "quiz": 1}}, "weights['echo'] must be a positive"),
        ({"weights": {"echo": 3, "quiz": 1, "seta": 1}}, "weights names 'seta', which is not"),
        ({"weights": {"echo": 3}}, "environment 'quiz' has no weight"),
        ({"weights": {"echo": 3, "quiz": 1}, "block": None}, "weights= needs block="),
        ({"weights": {"echo": 3, "quiz": 1}, "block": 0}, "block= must be at least 1"),
        ({"weights": {"echo": 3, "quiz": 1}, "block": 2.5}, "block= must be a whole number"),
        ({"weights": {"echo": 99, "quiz": 1}}, "gives environment 'quiz' no row"),
        ({"weights": None}, "block= shapes a weighted mixture: pass weights= too"),
        ({"weights": None, "block": None, "seed": 0}, "seed= shapes a weighted mixture"),
    ],
)
def test_bad_settings_are_one_line_errors(options: dict[str, Any], says: str) -> None:
    settings_ = {"block": 4, **options}
    with pytest.raises(ValueError) as caught:
        bundle_tasks({"echo": tasks(4, "target"), "quiz": tasks(2, "question")}, **settings_)
    message = str(caught.value)
    assert says in message and "\n" not in message


def test_without_weights_an_environment_cannot_choose_its_tasks() -> None:
    with pytest.raises(ValueError, match="a dataset of None .* pass weights= too"):
        bundle_tasks({"echo": tasks(4, "target"), "quiz": None})


def test_a_weighted_environment_needs_tasks() -> None:
    with pytest.raises(ValueError, match="dataset 'quiz' has no rows"):
        bundle_tasks(
            {"echo": tasks(4, "target"), "quiz": tasks(0, "q")},
            weights={"echo": 1, "quiz": 1},
            block=2,
        )

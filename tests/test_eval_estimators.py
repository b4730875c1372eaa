"""The evaluation's estimators (orsgen/eval/summary.py) against their closed forms, and
the summary's rules on hand-built rows (orsgen/eval/summary.py)."""

from __future__ import annotations

import json
import math

import pytest

from orsgen.eval.summary import mean_and_se, pass_at_k, pass_hat_k
from orsgen.eval.summary import summarize


def test_pass_at_k_is_the_closed_form_for_every_n_c_k() -> None:
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                closed = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert pass_at_k(n, c, k) == pytest.approx(closed, abs=1e-12), (n, c, k)


def test_pass_hat_k_is_the_closed_form() -> None:
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_hat_k(n, c, k) == pytest.approx(math.comb(c, k) / math.comb(n, k))


def test_pass_at_k_stays_exact_for_large_n() -> None:
    # C(200, 100) overflows a float; the product form does not.
    assert pass_at_k(200, 1, 100) == pytest.approx(0.5)
    assert pass_at_k(200, 0, 100) == 0.0 and pass_at_k(200, 200, 1) == 1.0


@pytest.mark.parametrize("n,c,k", [(0, 0, 1), (3, 4, 1), (3, 1, 0), (3, 1, 4), (3, -1, 1)])
def test_impossible_counts_are_refused(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_mean_and_se() -> None:
    assert mean_and_se([]) == (None, None)
    assert mean_and_se([2.0]) == (2.0, None)
    mean, se = mean_and_se([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5 and se == pytest.approx(math.sqrt((1.25 * 4 / 3) / 4))


def _row(task: int, sample: int, verdict: str, reward: float | None) -> dict[str, object]:
    return {"task_index": task, "sample": sample, "verdict": verdict, "reward": reward}


def test_summary_rules_unscored_samples_count_as_not_passing() -> None:
    config = {"n": 2, "pass_threshold": 1.0, "unfinished_reward": 0.5, "task_indices": [0, 1]}
    rows = [
        _row(0, 0, "scored", 1.0),
        _row(0, 1, "failed", None),
        _row(1, 0, "unfinished", 0.5),
        _row(1, 1, "scored", 0.0),
    ]
    s = summarize(rows, config)
    assert s["coverage"] == 0.5
    assert s["mean_reward"] == 0.5  # over the two scored rollouts: (1.0 + 0.0) / 2
    assert s["mean_reward_all"] == pytest.approx((1.0 + 0.0 + 0.5 + 0.0) / 4)
    # task 0: 1 of 2 passes; task 1: none.
    assert s["pass_at_k"] == {"1": pytest.approx(0.25), "2": pytest.approx(0.5)}
    assert s["pass_hat_k"] == {"1": pytest.approx(0.25), "2": 0.0}
    # Over scored samples only: task 0 has 1 scored (passing), task 1 has 1 (not passing).
    assert s["pass_at_k_scored"] == {"1": pytest.approx(0.5)}
    assert [t["task_index"] for t in s["per_task"]] == [0, 1]
    assert s["verdicts"] == {"scored": 2, "unfinished": 1, "failed": 1}


def test_each_sample_and_turn_gets_its_own_request_seed() -> None:
    """--seed must not send one seed with every request: transformers serve reseeds per
    request, so every sample of a task would be the same sample and pass@k would be pass@1."""
    from orsgen.eval.conversation import request_seed

    assert request_seed(None, 0, 0, 0) is None
    seeds = {
        request_seed(7, task, sample, turn)
        for task in range(5)
        for sample in range(8)
        for turn in range(3)
    }
    assert len(seeds) == 5 * 8 * 3
    assert all(s is not None and 0 <= s < 2**31 for s in seeds)
    assert request_seed(7, 1, 2, 0) == request_seed(7, 1, 2, 0)  # reproducible
    assert request_seed(7, 1, 2, 0) != request_seed(8, 1, 2, 0)


def test_zero_variance_is_the_share_of_alike_groups_for_every_g_up_to_n() -> None:
    """Counted over every group of G of the n samples (drawn without replacement), and, as
    an estimator, unbiased for p^G + (1-p)^G: its expectation over c ~ Binomial(n, p)."""
    from itertools import combinations

    from orsgen.eval.summary import zero_variance

    for n in range(2, 13):
        for c in range(n + 1):
            outcomes = [True] * c + [False] * (n - c)
            for g in range(2, n + 1):
                groups = list(combinations(outcomes, g))
                alike = sum(all(x) or not any(x) for x in groups) / len(groups)
                closed = (math.comb(c, g) + math.comb(n - c, g)) / math.comb(n, g)
                assert zero_variance(n, c, g) == pytest.approx(alike, abs=1e-12), (n, c, g)
                assert zero_variance(n, c, g) == pytest.approx(closed, abs=1e-12), (n, c, g)
        for p in (0.0, 0.1, 0.5, 0.9, 1.0):
            for g in range(2, n + 1):
                expected = sum(
                    math.comb(n, c) * p**c * (1 - p) ** (n - c) * zero_variance(n, c, g)
                    for c in range(n + 1)
                )
                assert expected == pytest.approx(p**g + (1 - p) ** g, abs=1e-12), (n, p, g)
    with pytest.raises(ValueError):
        zero_variance(3, 1, 4)


def test_summary_zero_variance_share_averages_the_fully_scored_tasks() -> None:
    from orsgen.eval.summary import no_gradient_tasks

    for n in range(1, 13):
        passing = {0: 0, 1: n, 2: n // 2, 3: 1}  # task -> passing samples (all scored)
        rows = [
            _row(t, s, "scored", 1.0 if s < c else 0.0)
            for t, c in passing.items()
            for s in range(n)
        ]
        # Task 4 has one failed sample: left out, whatever its other samples did.
        rows += [_row(4, s, "scored" if s else "failed", 0.0 if s else None) for s in range(n)]
        config = {"n": n, "pass_threshold": 1.0, "task_indices": [0, 1, 2, 3, 4]}
        s = summarize(rows, config)
        share = s["zero_variance_share"]
        assert list(share) == [str(g) for g in range(2, n + 1)]
        for g in range(2, n + 1):
            closed = [
                (math.comb(c, g) + math.comb(n - c, g)) / math.comb(n, g) for c in passing.values()
            ]
            assert share[str(g)] == pytest.approx(sum(closed) / len(closed)), (n, g)
        always_or_never = [t for t, c in passing.items() if c in (0, n)]
        assert no_gradient_tasks(s["per_task"], n) == always_or_never
    unscored = [_row(0, 0, "failed", None), _row(0, 1, "failed", None)]
    none_scored = summarize(unscored, {"n": 2, "pass_threshold": 1.0, "task_indices": [0]})
    assert none_scored["zero_variance_share"] == {"2": None}


def test_the_summary_is_one_pass_over_the_rows() -> None:
    """summarize reads each row once and keeps none (issue 29: flat memory at 100,000
    rollouts): a one-shot iterator of the rows gives the same summary as the list."""
    rows = [
        _row(t, s, v, r)
        for t, s, v, r in [
            (0, 1, "scored", 1.0),
            (1, 0, "unfinished", 0.5),
            (0, 0, "failed", None),
            (1, 1, "scored", 0.25),
            (2, 0, "scored", 1.0),  # a task beyond task_indices is kept, after them
        ]
    ]
    config = {"n": 2, "pass_threshold": 0.5, "unfinished_reward": 0.5, "task_indices": [0, 1]}
    once = summarize(iter(rows), config)
    assert once == summarize(rows, config)
    assert [t["task_index"] for t in once["per_task"]] == [0, 1, 2]
    assert once["rollouts"] == 5 and once["tasks"] == 3 and once["expected_rollouts"] == 6
    task1 = once["per_task"][1]
    assert (task1["scored"], task1["unfinished"], task1["passed"]) == (1, 1, 1)
    assert task1["mean_reward"] == 0.25 and task1["pass_at_k_scored"] == {"1": 0.0}


def test_a_tasks_figures_are_read_only_and_the_summary_keeps_no_cache(tmp_path) -> None:
    """Tasks with the same counts share their pass@k figures (flat memory at 100,000
    rollouts), read-only: changing one task's cannot change another's. No cache outlives a
    call, and summary.json still holds plain objects."""
    import orsgen.eval.summary as module
    from orsgen.rundir import write_json

    rows = [_row(t, 0, "scored", 1.0) for t in range(2)]
    s = summarize(rows, {"n": 1, "pass_threshold": 1.0, "task_indices": [0, 1]})
    first, second = s["per_task"]
    for key in ("pass_at_k", "pass_hat_k", "pass_at_k_scored"):
        with pytest.raises(TypeError):
            first[key]["1"] = 0.0
        assert second[key] == {"1": 1.0}
    assert [name for name, value in vars(module).items() if hasattr(value, "cache_info")] == []
    write_json(tmp_path / "summary.json", s)
    assert json.loads((tmp_path / "summary.json").read_text())["per_task"][1]["pass_at_k"] == {
        "1": 1.0
    }

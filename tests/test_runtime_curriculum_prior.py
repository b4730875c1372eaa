"""An evaluation-seeded curriculum (issue 26, item 3): ``PassRateCurriculum(prior=...)``
with an ``orsgen eval`` run directory (or several), an ``EvalResult`` or a mapping from
task index to pass rate.

Everything goes through what a user runs: a real coinenv server (bench/coin_env.py: tasks
0-6 always pass, 7-13 never, 14-19 by the environment's own coin), an evaluation of the
generated package (bench/coinenv) by ``orsgen.eval.evaluate`` against an endpoint that
answers at once (tests/answer_model.py: the environment grades any answer by its coin),
then the package's adapter choosing tasks itself (``train_dataset=None``) and its
``outcome_reward`` feeding the outcomes back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import ors_server
from answer_model import AnswerModel
from conftest import import_generated
from orsgen.runtime.choosing import tasks
from orsgen.runtime.choosing.curriculum import PassRateCurriculum
from orsgen.runtime.choosing.prior import PriorError

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("fresh_runtime")]

ROOT = Path(__file__).resolve().parents[1]
COIN_ENV = ROOT / "bench" / "coin_env.py"
PLACEHOLDER = {"prompt": [{"role": "user", "content": ""}]}  # TRL's row with no dataset
ANSWER = [{"role": "assistant", "content": "yes"}]
SAMPLES = 4


@pytest.fixture(autouse=True)
def _fresh_choosers() -> None:
    tasks.samplers().clear()


@pytest.fixture(scope="module")
def server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(COIN_ENV)


@pytest.fixture(scope="module")
def coinenv() -> Any:
    return import_generated(ROOT / "bench" / "coinenv")


@pytest.fixture(scope="module")
def evaluation(server, coinenv, tmp_path_factory) -> Any:  # type: ignore[no-untyped-def]
    """An evaluation of coinenv's train split, written to a run directory."""
    from orsgen.eval import EvalConfig, evaluate

    out = tmp_path_factory.mktemp("prior") / "run"
    with AnswerModel() as model:
        return evaluate(
            coinenv.CoinEnv,
            EvalConfig(endpoint=model.endpoint, model="answer", n=SAMPLES),
            adapter={"base_url": server.url},
            concurrency=4,
            out=out,
            progress=False,
        )


def _pools_of(summary: dict[str, Any]) -> dict[int, str]:
    """The pool each task of an evaluation starts in: its rate over scored samples."""
    out = {}
    for task in summary["per_task"]:
        passed, scored = task["passed"], task["scored"]
        out[task["task_index"]] = (
            "solved" if passed == scored else "unsolved" if passed == 0 else "learning"
        )
    return out


def _chosen(coinenv: Any, url: str, curriculum: PassRateCurriculum, groups: int) -> list[int]:
    """``groups`` groups of 2 through the package, as GRPOTrainer drives them."""
    envs = [
        coinenv.CoinEnv(base_url=url, group_size=2, seed=1, curriculum=curriculum) for _ in range(2)
    ]
    chosen = []
    try:
        for _group in range(groups):
            for env in envs:
                env.reset(**PLACEHOLDER)
            chosen.append(envs[0].rollout.task_index)
            coinenv.outcome_reward(envs, completions=[ANSWER, ANSWER])
    finally:
        for env in envs:
            env.close()
    return chosen


def test_a_run_directory_puts_every_task_in_its_pool(  # type: ignore[no-untyped-def]
    server, coinenv, evaluation
) -> None:
    expected = _pools_of(evaluation.summary)
    assert evaluation.summary["coverage"] == 1.0 and set(expected) == set(range(20))
    curriculum = PassRateCurriculum(prior=evaluation.out)
    chosen = _chosen(coinenv, server.url, curriculum, 1)
    # No unseen task, so no first pass: the very first group draws by the pools' weights.
    assert {t: curriculum.pool(t) for t in range(20) if t != chosen[0]} == {
        t: p for t, p in expected.items() if t != chosen[0]
    }
    assert [curriculum.pool(t) for t in range(7)] == ["solved"] * 7
    assert [curriculum.pool(t) for t in range(7, 14)] == ["unsolved"] * 7
    assert curriculum.pools()["unseen"] == 0


def test_the_prior_skips_the_first_pass(server, coinenv, evaluation) -> None:  # type: ignore[no-untyped-def]
    learning = {t for t, p in _pools_of(evaluation.summary).items() if p == "learning"}
    assert learning, "the evaluation found no task the model sometimes passes"
    blind = _chosen(coinenv, server.url, PassRateCurriculum(), 20)
    tasks.samplers().clear()
    seeded = _chosen(coinenv, server.url, PassRateCurriculum(prior=evaluation.out), 20)
    assert sorted(blind) == list(range(20))  # without a prior: every task once, first
    # With it: learning tasks weigh 1 each, the 14 others 0.01 each (uniform: len(learning)).
    assert sum(t in learning for t in seeded) >= max(12, 2 * len(learning)), (seeded, learning)


def test_an_eval_result_and_several_runs(server, coinenv, evaluation, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from_result = PassRateCurriculum(prior=evaluation)
    assert from_result.prior is not None and from_result.prior.rates == (
        PassRateCurriculum(prior=str(evaluation.out)).prior.rates  # type: ignore[union-attr]
    )
    again = tmp_path / "again"
    shutil.copytree(evaluation.out, again)
    both = PassRateCurriculum(prior=[evaluation.out, again])
    assert both.prior is not None and both.prior.rates == from_result.prior.rates
    _chosen(coinenv, server.url, both, 1)  # the same stream: accepted


def test_uncovered_tasks_stay_unseen_and_are_visited_first(server, coinenv) -> None:  # type: ignore[no-untyped-def]
    curriculum = PassRateCurriculum(prior={0: 1.0, 7: 0.0, 14: 0.5})
    chosen = _chosen(coinenv, server.url, curriculum, 17)
    assert sorted(chosen) == sorted(set(range(20)) - {0, 7, 14})  # the first pass, unseen only
    assert (curriculum.pool(0), curriculum.pool(7), curriculum.pool(14)) == (
        "solved",
        "unsolved",
        "learning",
    )
    assert curriculum.pools()["unseen"] == 0  # each visited task now has its own group


def test_later_outcomes_move_a_task_out_of_its_prior_pool(server, coinenv) -> None:  # type: ignore[no-untyped-def]
    """Task 7 never passes; a (wrong) prior says it always does. The prior is one group
    of the window of two: one failed group makes it learning, two make it unsolved."""
    curriculum = PassRateCurriculum(prior={7: 1.0})
    env = coinenv.CoinEnv(base_url=server.url, group_size=1, indices=[7], curriculum=curriculum)
    seen = [curriculum.pool(7)]
    try:
        for _group in range(2):
            env.reset(**PLACEHOLDER)
            coinenv.outcome_reward([env], completions=[ANSWER])
            seen.append(curriculum.pool(7))
    finally:
        env.close()
    assert seen == ["unseen", "learning", "unsolved"]  # "unseen" before the stream started


@pytest.mark.parametrize(
    ("field", "value"),
    [("split", "test"), ("environment", "otherenv"), ("tools_sha256", "0" * 64)],
)
def test_a_prior_of_another_stream_is_refused(  # type: ignore[no-untyped-def]
    coinenv, evaluation, tmp_path, field, value
) -> None:
    other = tmp_path / "other"
    shutil.copytree(evaluation.out, other)
    run = json.loads((other / "run.json").read_text())
    run[field] = value
    (other / "run.json").write_text(json.dumps(run))
    curriculum = PassRateCurriculum(prior=other)
    with pytest.raises(PriorError, match=f"measured with {field}='{value}'.* {field}="):
        coinenv.CoinEnv(base_url="http://127.0.0.1:9", curriculum=curriculum)


def test_a_prior_judged_by_another_threshold_is_refused(coinenv, evaluation) -> None:  # type: ignore[no-untyped-def]
    curriculum = PassRateCurriculum(prior=evaluation.out)
    with pytest.raises(PriorError, match="pass_threshold=1.0.* pass_threshold=0.5"):
        coinenv.CoinEnv(base_url="http://127.0.0.1:9", curriculum=curriculum, pass_threshold=0.5)
    # A plain mapping carries no identity: any stream takes it.
    coinenv.CoinEnv(base_url="http://127.0.0.1:9", curriculum=PassRateCurriculum(prior={0: 1.0}))


def test_bad_priors_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(PriorError, match="not an orsgen eval run .no run.json"):
        PassRateCurriculum(prior=tmp_path)
    with pytest.raises(PriorError, match=r"prior\[3\] must be a pass rate in \[0, 1\]"):
        PassRateCurriculum(prior={3: 1.5})
    with pytest.raises(PriorError, match="prior must be an evaluation run directory"):
        PassRateCurriculum(prior=42)


def test_the_prior_survives_a_state_dict() -> None:
    made = PassRateCurriculum(prior={t: 0.5 for t in range(10)})
    made.start(range(20), 3, 4)
    json_state = json.loads(json.dumps(made.state_dict()))
    again = PassRateCurriculum()  # no prior given: the state carries it
    again.load_state_dict(json_state)
    assert (
        again.pools() == made.pools() == {"unseen": 10, "learning": 10, "solved": 0, "unsolved": 0}
    )
    assert [again.choose(g) for g in range(40)] == [made.choose(g) for g in range(40)]

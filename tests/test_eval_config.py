"""``evaluate(env, config)``: an :class:`EvalConfig` is both the parameters of a run and the
identity ``run.json`` holds. A real ORS server (tests/envs/chance_env.py) and the scripted
OpenAI-compatible stand-in (tests/openai_standin.py) on 127.0.0.1; nothing is mocked."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

import pytest

from conftest import counted_adapters, import_generated

CHANCE_TEST_TASKS = 4  # tests/envs/chance_env.py's "test" split

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_run_json_is_the_config_evaluate_was_given(
    chance_dir, chance_server, standin, tmp_path
) -> None:
    from orsgen.eval import EvalConfig, evaluate
    from orsgen.eval.config import adapter_identity

    pkg = import_generated(chance_dir)
    config = EvalConfig(
        **adapter_identity(pkg.ChanceEnv),
        model=standin.model,
        endpoint=standin.endpoint,
        split="test",
        n=2,
        task_indices=(3, 1),
        max_turns=4,
        temperature=0.0,
        max_tokens=32,
        max_rollout_tokens=500,
        seed=7,
        pass_threshold=0.5,
        unfinished_reward=0.0,
        price=(0.5, 2),
    )
    out = tmp_path / "run"
    adapter = {"base_url": chance_server.url}
    result = evaluate(
        pkg.ChanceEnv, config, adapter=adapter, out=out, concurrency=2, progress=False
    )
    assert EvalConfig.load(out) == config  # run.json's identity is the config given
    assert result.config == config
    assert result.summary["n"] == 2 and result.summary["split"] == "test"
    assert sorted((r.task_index, r.sample) for r in result.records) == [
        (1, 0),
        (1, 1),
        (3, 0),
        (3, 1),
    ]
    # The same config resumes the run (nothing left to do); a changed one is refused.
    again = evaluate(pkg.ChanceEnv, config, adapter=adapter, out=out, resume=True, progress=False)
    assert again.config == config and len(again.records) == 4
    from orsgen.eval import RunFileError

    with pytest.raises(RunFileError, match="seed was 7 and is now 8: cannot resume"):
        evaluate(
            pkg.ChanceEnv,
            dataclasses.replace(config, seed=8),
            adapter=adapter,
            out=out,
            resume=True,
            progress=False,
        )


def test_fields_left_out_come_from_the_environment(
    chance_dir, chance_server, standin, tmp_path
) -> None:
    from orsgen.eval import EvalConfig, evaluate
    from orsgen.eval.config import ADAPTER_FIELDS
    from orsgen.runtime.records.passk import PASS_THRESHOLD

    pkg = import_generated(chance_dir)
    given = EvalConfig(model=standin.model, endpoint=standin.endpoint, split="test")
    out = tmp_path / "run"
    adapter = {"base_url": chance_server.url}
    result = evaluate(pkg.ChanceEnv, given, adapter=adapter, out=out, progress=False)
    config = result.config
    assert config is not None and config == EvalConfig.load(out)
    assert config.task_indices == tuple(range(CHANCE_TEST_TASKS))  # the split's size
    assert config.pass_threshold == PASS_THRESHOLD
    assert (config.environment, config.adapter) == (pkg.ChanceEnv.ENV_NAME, "ChanceEnv")
    assert config.tools_sha256 == pkg.ChanceEnv.TOOLS_SHA256
    filled = ("task_indices", "pass_threshold", *ADAPTER_FIELDS)
    assert dataclasses.replace(config, **dict.fromkeys(filled)) == given  # the rest as given
    first = EvalConfig(model=standin.model, endpoint=standin.endpoint, split="test", num_tasks=2)
    result = evaluate(pkg.ChanceEnv, first, adapter=adapter, progress=False)
    assert result.config is not None and result.config.task_indices == (0, 1)
    assert result.config.num_tasks is None  # a run's config names its tasks


def test_changing_one_tasks_figures_leaves_the_others(
    chance_dir, chance_server, standin, tmp_path
) -> None:
    """EvalResult.summary: tasks with the same counts share their pass@k figures, read-only."""
    from orsgen.eval import EvalConfig, evaluate

    pkg = import_generated(chance_dir)
    config = EvalConfig(model=standin.model, endpoint=standin.endpoint, split="test")
    adapter = {"base_url": chance_server.url}
    result = evaluate(pkg.ChanceEnv, config, adapter=adapter, progress=False)
    tasks = result.summary["per_task"]  # 4 tasks of 1 sample: two pass alike
    a, b = next(
        (a, b)
        for i, a in enumerate(tasks)
        for b in tasks[i + 1 :]
        if (a["samples"], a["passed"]) == (b["samples"], b["passed"])
    )
    before = dict(b["pass_at_k"])
    with contextlib.suppress(TypeError):  # read-only
        a["pass_at_k"]["1"] = -1.0
    assert dict(b["pass_at_k"]) == before


def test_an_unusable_config_is_refused_naming_the_field_before_any_rollout(
    chance_dir, chance_server, standin, tmp_path
) -> None:
    from orsgen.eval import EvalConfig, EvalConfigError, evaluate

    pkg = import_generated(chance_dir)
    base = dict(model=standin.model, endpoint=standin.endpoint, split="test")
    for fields, words in [
        ({"n": 0}, "n must be an integer of at least 1"),
        ({"num_tasks": 2, "task_indices": [0]}, "pass num_tasks or task_indices, not both"),
        ({"task_indices": []}, "task_indices is empty"),
        ({"max_turns": 0}, "max_turns must be"),
        ({"temperature": -0.5}, "temperature must be at least 0"),
        ({"pass_threshold": float("inf")}, "pass_threshold must be a finite number"),
        ({"max_rollout_tokens": 0}, "max_rollout_tokens must be an integer of at least 1"),
        ({"price": (1.0, -1.0)}, r"price must be \(IN, OUT\), two numbers of at least 0"),
        ({"price": 3.0}, r"price must be \(IN, OUT\)"),
    ]:
        with pytest.raises(EvalConfigError, match=words):
            EvalConfig(**base, **fields)
    factory, made, closed = counted_adapters(pkg.ChanceEnv, chance_server.url)
    cases: list[tuple[EvalConfig, dict[str, Any], str]] = [
        (EvalConfig(**base, task_indices=(0, 9)), {}, "task_indices names 9, past the end"),
        (EvalConfig(**base, tools_sha256="0" * 64), {}, "tools_sha256 is '0000"),
        (EvalConfig(**base, environment="other"), {}, "environment is 'other'"),
        (EvalConfig(**base), {"adapter": {"seed": 1}}, "adapter= configures an adapter class"),
        (EvalConfig(**base), {"concurrency": 0}, "concurrency must be"),
    ]
    for n, (config, keywords, words) in enumerate(cases):
        out = tmp_path / f"run{n}"
        made.clear()
        closed.clear()
        with pytest.raises(EvalConfigError, match=words):
            evaluate(factory, config, out=out, progress=False, **keywords)
        assert not (out / "results.jsonl").exists(), words  # no rollout ran
        assert len(closed) == len(made), words  # adapters closed on this path too


def test_every_adapter_is_closed_when_one_close_raises(
    chance_dir, chance_server, standin, tmp_path
) -> None:
    from orsgen.eval import EvalConfig, evaluate

    pkg = import_generated(chance_dir)
    factory, made, closed = counted_adapters(
        pkg.ChanceEnv, chance_server.url, fail_first_close=True
    )

    config = EvalConfig(model=standin.model, endpoint=standin.endpoint, split="test", n=3)
    with pytest.raises(RuntimeError, match="close failed"):
        evaluate(factory, config, concurrency=3, progress=False)
    assert len(made) >= 2 and len(closed) == len(made)  # the failing close stopped no other


def test_each_adapter_class_gets_its_own_tool_schemas_made_once() -> None:
    """Conversation.tools caches the names and schemas per class (the hot path found them
    on every rollout), the methods bound to each adapter."""
    from orsgen.eval import EvalConfig
    from orsgen.eval.conversation import Conversation, tool_schemas, trl_tools

    class Say:
        def say(self, text: str) -> str:
            """Say something.

            Args:
                text: what to say
            """
            return text

    class Guess:
        def guess(self, word: str, count: int) -> str:
            """Guess a word.

            Args:
                word: the guess
                count: how many times
            """
            return word

    from orsgen.eval.endpoints import Endpoints

    nowhere = Endpoints(["http://127.0.0.1:1/v1"], None, 1.0)  # no request is sent
    talk = Conversation(nowhere, EvalConfig(model="m", endpoint="http://127.0.0.1:1/v1"), None)
    for kind in (Say, Guess, Say):
        env = kind()
        tools, got = talk.tools(env)
        assert tools == trl_tools(env) and got == tool_schemas(trl_tools(env))
        other = kind()
        tools, again = talk.tools(other)
        assert again is got  # made once per class
        assert all(method.__self__ is other for method in tools.values())  # bound to it
    assert [s["function"]["name"] for s in talk.tools(Guess())[1]] == ["guess"]

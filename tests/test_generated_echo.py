"""The committed example package talks to a real echo server end to end."""

from __future__ import annotations

from generated.echo import EchoEnv, load_tasks, outcome_reward


def test_rollout_against_real_server(echo_server) -> None:
    base = echo_server.open_sessions()  # the server is shared with other tests
    env = EchoEnv(base_url=echo_server.url)
    prompt = env.reset(task_index=0)
    assert "apple" in prompt
    assert env.echo(text="apple") == "echo: apple"
    assert env.reward == 1.0 and env.finished
    assert outcome_reward([env]) == [1.0]
    env.close()
    assert echo_server.wait_sessions(base) == base


def test_dataset_rows(echo_server) -> None:
    ds = load_tasks(base_url=echo_server.url)
    assert ds["task_index"] == [0, 1, 2, 3]
    assert ds["target"] == ["apple", "banana", "cherry", "damson"]
    assert ds[0]["prompt"] == [{"role": "user", "content": ""}]


def test_the_package_docstring_example_runs(echo_server) -> None:
    # The usage example a user reads first in generated/echo/__init__.py, run as written
    # (against the test's server, with a stand-in trainer that keeps its arguments).
    import textwrap

    import generated.echo

    doc = generated.echo.__doc__ or ""
    lines = doc.split("::\n", 1)[1].splitlines()
    end = next(i for i, line in enumerate(lines) if line and not line.startswith("    "))
    example = textwrap.dedent("\n".join(lines[:end]))
    assert "GRPOTrainer(" in example, example
    example = example.replace('"http://127.0.0.1:8080"', repr(echo_server.url))
    kept: dict[str, object] = {}
    scope = {"GRPOTrainer": lambda **kw: kept.update(kw), "GRPOConfig": lambda *a: None}
    exec(compile(example, "generated/echo/__init__.py (docstring)", "exec"), scope)
    assert kept["train_dataset"]["target"][0] == "apple"  # type: ignore[index]
    env = kept["environment_factory"]()  # type: ignore[operator]
    assert "apple" in env.reset(task_index=0)
    env.close()

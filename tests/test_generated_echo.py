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

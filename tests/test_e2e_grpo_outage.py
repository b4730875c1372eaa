"""A real GRPOTrainer.train() on CPU rides out an environment outage.

The echo server is stopped right after the second step's rollouts opened their sessions,
for 40 s (longer than the SDK's own retries, shorter than the reconnect window), then
restarted on the same port. The step whose sessions the restart lost logs ``None``
rewards; the steps after it score again; train() completes; no session is left open.
Nothing is mocked: the server really stops (by PID), the trainer is TRL's own.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

import ors_server

ROOT = Path(__file__).resolve().parents[1]
ECHO_ENV = ROOT / "examples" / "echo_env.py"
# Longer than the SDK's own retries and the step's tool calls (at most 4 x timeout=5 s), so
# that without a reconnect window the next step's reset raises; far shorter than the window.
OUTAGE = 40.0

pytest.importorskip("trl")
pytest.importorskip("tokenizers")

import tiny_model  # noqa: E402  (examples/, on sys.path via conftest)

from generated.echo import EchoEnv, load_tasks, outcome_reward  # noqa: E402


class OutageEchoEnv(EchoEnv):
    """EchoEnv whose Nth reset, once its session is open, stops the server and restarts
    it OUTAGE seconds later: the rollout's tool call meets the outage."""

    servers: ClassVar[ors_server.Servers | None] = None
    server: ClassVar[ors_server.RunningServer | None] = None
    stop_at_reset: ClassVar[int] = 0
    resets: ClassVar[int] = 0
    restarter: ClassVar[threading.Thread | None] = None

    def reset(self, task_index: int | None = None, task_spec: Any = None, **row: Any) -> str:
        prompt = super().reset(task_index=task_index, task_spec=task_spec, **row)
        cls = OutageEchoEnv
        cls.resets += 1
        servers = cls.servers
        if cls.resets == cls.stop_at_reset and cls.server is not None and servers is not None:
            port = int(cls.server.url.rsplit(":", 1)[1])
            cls.server.stop()

            def restart() -> None:
                time.sleep(OUTAGE)
                cls.server = servers.own(ECHO_ENV, port=port)

            cls.restarter = threading.Thread(target=restart)
            cls.restarter.start()
        return prompt


@pytest.fixture()
def outage(ors_servers: ors_server.Servers) -> Iterator[ors_server.RunningServer]:
    """An echo server of this test's own that OutageEchoEnv stops and restarts on its port."""
    srv = ors_servers.own(ECHO_ENV)
    OutageEchoEnv.servers, OutageEchoEnv.server = ors_servers, srv
    try:
        yield srv
    finally:
        if OutageEchoEnv.restarter is not None:
            OutageEchoEnv.restarter.join()
        for running in {id(s): s for s in (srv, OutageEchoEnv.server) if s}.values():
            running.stop()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_grpo_train_survives_an_outage(outage: ors_server.RunningServer, tmp_path: Path) -> None:
    import torch
    from trl import GRPOTrainer

    torch.set_num_threads(1)
    train_dataset = load_tasks(base_url=outage.url)
    probe = EchoEnv(base_url=outage.url)
    episodes = []
    for row in train_dataset:
        prompt = probe.reset(**row)
        episodes.append(
            tiny_model.Episode(prompt, {"text": row["target"]}, probe.echo(text=row["target"]))
        )
    probe.close()
    model_dir = tiny_model.build_tiny_model(
        tmp_path / "tiny", tools=[probe.echo, probe.hint], episodes=episodes, tool_name="echo"
    )

    returned: list[list[float | None]] = []

    def recording_reward(environments: Any, **kwargs: Any) -> list[float | None]:
        rewards = outcome_reward(environments, **kwargs)
        returned.append(rewards)
        return rewards

    recording_reward.__name__ = outcome_reward.__name__
    # Step 2 is resets 3 and 4 (2 rollouts a step): stop once both sessions are open.
    OutageEchoEnv.resets, OutageEchoEnv.stop_at_reset = 0, 4
    trainer = GRPOTrainer(
        model=str(model_dir),
        args=tiny_model.cpu_grpo_config(tmp_path / "out", max_steps=4),
        train_dataset=train_dataset,
        environment_factory=functools.partial(
            OutageEchoEnv, base_url=outage.url, timeout=5, reconnect_for=120
        ),
        reward_funcs=recording_reward,
    )
    try:
        trainer.train()  # completes: nothing raised through the outage
    finally:
        OutageEchoEnv.close_all()
    print(f"rewards per step: {returned}")
    assert len(returned) == 4, returned
    assert returned[1] == [None, None], returned  # the step whose sessions the restart lost
    assert 1.0 in returned[2] + returned[3], returned  # scoring again after the restart
    assert OutageEchoEnv.restarter is not None
    OutageEchoEnv.restarter.join()
    assert OutageEchoEnv.server is not None and OutageEchoEnv.server is not outage
    assert OutageEchoEnv.server.wait_sessions(0, timeout=30) == 0

"""orsgen/runtime/sessions/opening.py: a reset's session open and what its errors say, on a real
server (tests/envs/split_defaults_env.py)."""

from __future__ import annotations

from typing import ClassVar

import ors_server
import pytest
from conftest import ENVS

from orsgen.runtime.adapter import OrsAdapter, SessionOpenError

pytestmark = [pytest.mark.usefixtures("fresh_runtime"), pytest.mark.timeout(120)]

SPLITS_ENV = ENVS / "split_defaults_env.py"


class EmptyTrain(OrsAdapter):
    """What orsgen would generate for split_defaults_env.py's ``emptytrain`` (no snapshot:
    no drift guard). Its one split, ``train``, has no tasks."""

    ENV_NAME: ClassVar[str | None] = "emptytrain"


class OnlyTest(OrsAdapter):
    ENV_NAME: ClassVar[str | None] = "onlytest"
    DEFAULT_SPLIT: ClassVar[str] = "test"


@pytest.fixture(scope="module")
def server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(SPLITS_ENV, envs=("EmptyTrain", "OnlyTest"))


def test_reset_on_a_split_with_no_tasks_says_so(server: ors_server.RunningServer) -> None:
    env = EmptyTrain(base_url=server.url, prefetch=False)
    with pytest.raises(SessionOpenError) as raised:
        env.reset(task_index=0)
    message = str(raised.value)
    assert "split 'train' has no tasks" in message, message
    assert "Invalid index" not in message
    assert "task 0 of split 'train' on emptytrain at " + server.url in message
    assert raised.value.__cause__ is not None  # the server's own answer stays reachable
    assert server.wait_sessions(0) == 0  # the half-open session was deleted


def test_an_index_past_the_end_of_a_split_with_tasks_keeps_the_servers_answer(
    server: ors_server.RunningServer,
) -> None:
    env = OnlyTest(base_url=server.url, prefetch=False)
    with pytest.raises(SessionOpenError, match="HTTP 400: Invalid index") as raised:
        env.reset(task_index=5)
    assert "has no tasks" not in str(raised.value)
    assert env.reset(task_index=1) == "Answer '3+3'."
    env.close()

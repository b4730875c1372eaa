"""No silent fallback to the platform, and every public entry
point fails with an orsgen error that names the server, the environment and the cause.

Real ORS servers throughout; a "dead" server is a closed loopback port or a server this
test stopped by PID.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import pytest

import ors_server
from conftest import ECHO_ENV, ROOT, failed
from generated.echo import EchoEnv, load_tasks, outcome_reward
from orsgen.runtime.adapter import OrsAdapter, SelfScoring
from orsgen.runtime.errors import (
    OrsRuntimeError,
    ServerNotConfiguredError,
    SessionOpenError,
    TaskLoadError,
)
from orsgen.runtime.rewards import group_reward

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("fresh_runtime")]

QUIZ_ENV = ROOT / "tests" / "envs" / "terminal_env.py"
JUDGE_ENV = ROOT / "tests" / "envs" / "judge_env.py"


def _closed_url() -> str:
    return f"http://127.0.0.1:{ors_server.free_port()}"


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in chain:
        chain.append(cur)
        cur = cur.__cause__
    return chain


# -- No silent fallback to the platform ------------------------------------------------


def test_file_package_without_a_url_raises_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENREWARD_SESSION_URL", raising=False)
    assert EchoEnv.DEFAULT_URL is None and EchoEnv.DEPLOYMENT is None  # a file target
    env = EchoEnv()  # constructing stays free of errors and I/O (TRL builds one to read tools)
    with pytest.raises(ServerNotConfiguredError) as info:
        env.reset(task_index=0)
    text = str(info.value)
    assert "base_url=" in text and "OPENREWARD_SESSION_URL" in text and "echoenv" in text, text
    assert "openreward.ai" not in text
    with pytest.raises(ServerNotConfiguredError) as info:
        load_tasks()
    assert "base_url=" in str(info.value) and "OPENREWARD_SESSION_URL" in str(info.value)
    assert isinstance(info.value, OrsRuntimeError)
    # A tool call raises only the counted failure TRL catches, never the configuration error.
    assert failed(env.echo, text="x").reason == "no_session"


def test_the_variable_or_base_url_serves_a_file_package(
    echo_server: ors_server.RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENREWARD_SESSION_URL", echo_server.url)
    env = EchoEnv()
    try:
        assert "apple" in env.reset(task_index=0)
    finally:
        env.close()
    assert len(load_tasks(num_tasks=2)) == 2


def test_catalog_packages_keep_the_platform_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENREWARD_SESSION_URL", raising=False)

    class CatalogEnv(EchoEnv):
        DEPLOYMENT: ClassVar[str | None] = "acme/echo"

    env = CatalogEnv()
    assert env._config.sessions.endpoint.session_url == "https://sessions.openreward.ai"
    assert env._config.no_server is None


# -- Every entry point fails with an orsgen error --------------------------------------


def test_load_tasks_against_a_closed_port() -> None:
    url = _closed_url()
    with pytest.raises(TaskLoadError) as info:
        load_tasks(base_url=url)
    text = str(info.value)
    assert url in text and "echoenv" in text and "cannot connect" in text, text
    assert "ssl:default" not in text
    assert any(type(c).__module__.startswith("aiohttp") for c in _causes(info.value))


def test_reset_against_a_closed_port() -> None:
    url = _closed_url()
    with pytest.raises(SessionOpenError) as info:
        EchoEnv(base_url=url).reset(task_index=0)
    text = str(info.value)
    assert isinstance(info.value, OrsRuntimeError)
    assert url in text and "echoenv" in text and "cannot connect" in text, text
    assert "ssl:default" not in text


class QuizAdapter(SelfScoring, OrsAdapter):
    """What orsgen generates for tests/envs/terminal_env.py (graded by its @terminal tool)."""

    ENV_NAME: ClassVar[str | None] = "quizenv"
    TERMINAL_TOOL: ClassVar[tuple[str, str | None] | None] = ("submit", "answer")


class JudgeAdapter(OrsAdapter):
    """What orsgen generates for tests/envs/judge_env.py (judges groups itself)."""

    ENV_NAME: ClassVar[str | None] = "judgeenv"
    SUPPORTS_SCORE_GROUP: ClassVar[bool] = True


def _answer(text: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": text}]


@pytest.mark.slow
def test_reward_functions_when_the_server_vanished(ors_servers: ors_server.Servers) -> None:
    quiz, judge = ors_servers.own(QUIZ_ENV), ors_servers.own(JUDGE_ENV)  # the test stops both
    # No reconnect window: the rollout degrades at once instead of waiting for the server.
    quizzes = [QuizAdapter(base_url=quiz.url, prefetch=False, reconnect_for=0) for _ in range(2)]
    judged = [JudgeAdapter(base_url=judge.url, prefetch=False, timeout=30) for _ in range(2)]
    for env in quizzes + judged:
        env.reset(task_index=0)
    quiz.stop()
    judge.stop()
    assert outcome_reward(quizzes, completions=[_answer("42"), _answer("41")]) == [None, None]
    assert all(e.last_output.startswith("Error: ") for e in quizzes)
    assert all("ssl:default" not in e.last_output for e in quizzes)
    assert [e.get_reward() for e in quizzes] == [None, None]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert group_reward(judged, completions=[_answer("apple"), _answer("pear")]) == [None, None]
    texts = [str(w.message) for w in caught]
    assert any("score_group" in t and judge.url in t and "judgeenv" in t for t in texts), texts
    assert all("ssl:default" not in t for t in texts), texts
    for env in quizzes + judged:
        env.close()


@pytest.mark.slow
def test_close_all_with_a_dead_server(ors_servers: ors_server.Servers) -> None:
    server = ors_servers.own(ECHO_ENV)  # the test stops it
    envs = [EchoEnv(base_url=server.url, group_size=2) for _ in range(2)]
    for env in envs:
        env.reset(task_index=0)
    server.stop()
    EchoEnv.close_all()  # best effort, bounded: never raises
    assert "no open session" in str(failed(envs[0].echo, text="apple"))

"""Environments graded through a @terminal tool: outcome_reward submits the final message.

TRL's bridge ignores terminal tools, so such environments never score under it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import ors_server
from conftest import served_package

ROOT = Path(__file__).resolve().parents[1]
QUIZ = ROOT / "tests" / "envs" / "terminal_env.py"


@pytest.fixture(scope="module")
def quiz(
    ors_servers: ors_server.Servers, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Any, ors_server.RunningServer]:
    return served_package(ors_servers, QUIZ, tmp_path_factory.mktemp("gen") / "quiz")


def _calls(server: ors_server.RunningServer) -> int:
    return server.requests().get("POST /quizenv/call", 0)


def test_terminal_tool_is_recorded_not_exposed(quiz: Any) -> None:
    module, _ = quiz
    assert module.QuizEnv.TERMINAL_TOOL == ("submit", "answer")
    assert "submit" not in module.QuizEnv.WIRE_NAMES and "scratch" in module.QuizEnv.WIRE_NAMES
    assert not hasattr(module.QuizEnv, "submit")


def test_final_message_is_graded_once(quiz: Any) -> None:
    module, server = quiz
    right, wrong, tool_end, silent = (
        module.QuizEnv(base_url=server.url, prefetch=False) for _ in range(4)
    )
    try:
        for env in (right, wrong, tool_end, silent):
            env.reset(task_index=0)
        assert right.scratch(text="thinking") == "noted"
        before = _calls(server)
        completions = [
            [{"role": "assistant", "content": "42"}],
            [{"role": "assistant", "content": "41"}],
            [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"function": {"name": "scratch"}}],
                }
            ],
        ]
        rewards = module.outcome_reward([right, wrong, tool_end], completions=completions)
        assert rewards == [1.0, 0.0, None]
        assert _calls(server) - before == 2  # the rollout that ended on a tool call submits nothing
        assert right.finished and right.rewards == [None, 1.0]
        # A second reward function call (or a second pass) never submits again.
        assert module.outcome_reward([right, wrong], completions=completions[:2]) == [1.0, 0.0]
        assert _calls(server) - before == 2
        # Without completions nothing is submitted and an unscored rollout stays None.
        assert module.outcome_reward([silent]) == [None]
        assert _calls(server) - before == 2
        # reset() starts a new episode that can be graded again.
        right.reset(task_index=1)
        assert module.outcome_reward(
            [right], completions=[[{"role": "assistant", "content": "4"}]]
        ) == [1.0]
    finally:
        module.QuizEnv.close_all()
    assert server.wait_sessions(0) == 0

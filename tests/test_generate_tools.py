"""Which tools become methods of a generated adapter, seen the way TRL sees them: TRL's
trainer lists ``inspect.getmembers(type(env), inspect.isfunction)`` and takes every public
name except ``reset`` and ``get_reward`` as a tool (``conftest.trl_tools`` does exactly
that), then reads each one's schema with ``get_json_schema``.

The rules environment (tests/envs/rules_env.py) has shared tools answer/score/explode and
a task tool ``shifty`` on task 0, the task the default probe opens.
"""

from __future__ import annotations

import pytest
from transformers.utils import get_json_schema

from conftest import RULES_SHARED_TOOLS as SHARED
from conftest import trl_tools

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings("ignore:task metadata 'answer':UserWarning"),  # see rules_env
]


def test_shared_and_task_tools_are_bound(rules_pkg) -> None:
    cls = rules_pkg.RulesEnv
    assert trl_tools(cls) == SHARED | {"shifty"}
    for name in trl_tools(cls):
        schema = get_json_schema(getattr(cls, name))  # TRL's view of the tool; must not raise
        assert schema["function"]["name"] == name
    # The task tool keeps the schema of the task that was probed (task 0: an integer).
    shifty = get_json_schema(cls.shifty)["function"]["parameters"]
    assert shifty["properties"]["n"]["type"] == "integer"
    assert shifty["required"] == ["n"]


def test_bound_tools_reach_the_server(rules_pkg, rules_server) -> None:
    env = rules_pkg.RulesEnv(base_url=rules_server.url)
    try:
        env.reset(task_index=0)
        rules_server.reset_counts()
        assert env.shifty(n=3) == "shifty 3"
        assert env.answer(text="nope") == "wrong: nope"
        assert rules_server.requests().get("POST /rulesenv/call") == 2
    finally:
        env.close()

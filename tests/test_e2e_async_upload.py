"""``upload_run=`` under TRL's AsyncGRPO rollout worker: the spawned child (started as
``AsyncRolloutWorker.start()`` does, tests/async_child.py) uploads its own rollouts to a
stand-in of the platform API (tests/platform_api.py), settled by ``get_reward()``, with
the model its ``loop_kwargs`` name; the child's exit flushes them."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

import ors_server
from platform_api import PlatformAPI

pytest.importorskip("trl")
pytest.importorskip("tokenizers")

from async_child import run_rollouts  # noqa: E402
from generated.echo import EchoEnv, ScoredEchoEnv, load_tasks  # noqa: E402
from orsgen.runtime.upload import UploadRun  # noqa: E402
from standin_vllm import echo_tokenizer  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
ECHO_ENV = Path(__file__).resolve().parents[1] / "examples" / "echo_env.py"
WANTED = 8


def test_the_rollout_child_uploads_its_own_rollouts(
    ors_servers: ors_server.Servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = ors_servers.own(ECHO_ENV)
    api = PlatformAPI(tmp_path)
    monkeypatch.setenv("OPENREWARD_API_URL", api.url)  # the spawned child inherits it
    monkeypatch.setenv("OPENREWARD_API_KEY", "or-async-key")
    monkeypatch.setenv("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
    try:
        dataset = load_tasks(base_url=server.url)
        probe = EchoEnv(base_url=server.url)
        tokenizer = echo_tokenizer([probe.echo, probe.hint], list(dataset["target"]))
        run = run_rollouts(
            functools.partial(ScoredEchoEnv, base_url=server.url, upload_run=UploadRun("async-up")),
            tokenizer,
            4,
            8,
            WANTED,
            dataset=dataset,
        )
    finally:
        server.stop()
        api.stop()  # also when the run fails: the stand-in is this test's process
    assert len(run.samples) >= WANTED
    uploaded = list(api.rollouts().values())
    assert len(uploaded) >= WANTED and len({r["eventId"] for r in uploaded}) == len(uploaded)
    for r in uploaded:
        assert r["runName"] == "async-up"
        assert r["run_info"]["training_stage"] == "rl" and r["run_info"]["model_name"]
        kinds = [m["type"] for m in r["messages"]]
        assert kinds[0] == "user_message" and "tool_call" in kinds and "tool_result" in kinds
        assert r["messages"][-1].get("reward") == 1.0
    print(
        f"\nAsyncGRPO child: {len(run.samples)} samples, {len(uploaded)} rollouts uploaded, "
        f"model {uploaded[0]['run_info']['model_name']!r}"
    )

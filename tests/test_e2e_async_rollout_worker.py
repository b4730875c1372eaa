"""TRL's AsyncGRPO rollout worker drives the generated adapter concurrently, on a CPU.

``trl.experimental.async_grpo.AsyncRolloutWorker`` refuses to start without vLLM, but
all it does is spawn a child running ``_AsyncRolloutLoop`` (via ``_child_main``), and
that loop only talks to vLLM over HTTP (``POST /v1/completions``). This test starts the
child exactly as ``AsyncRolloutWorker.start()`` does (mp ``spawn`` context, the same
shared queues/values/events, the same ``_child_main`` arguments, the same up-front
pickle check), against:

- a real instrumented ORS server running ``examples/echo_env.py`` (tests/ors_server.py);
- a stand-in generation server (tests/standin_vllm.py) that decodes the prompt ids with
  the rollout's tokenizer and answers with the right ``echo`` tool call, then "Done.".
  It is the only stand-in: the adapter, the openreward SDK and TRL's loop are unmodified.

What it shows: the ``functools.partial(EchoEnv, base_url=...)`` factory pickles into a
spawned process; the loop resets pooled adapters (sessions open on the server), the
tool calls reach ``POST /echoenv/call``, several sessions are open at once, the scored
``RolloutSample``s carry reward 1.0, and once the loop is stopped and the child exits
the server holds no session.

The reward. TRL 1.16's ``_AsyncRolloutLoop`` calls reward functions with
``completions``, ``prompts``, ``completion_ids`` and the dataset columns only - never
``environments`` (and it returns each environment to its pool, where the next rollout
resets it, before the group is scored). The generated ``outcome_reward(environments,
...)`` therefore cannot be one of its ``reward_funcs``: the score loop raises
``TypeError: outcome_reward() missing 1 required positional argument: 'environments'``
and the child fails. The loop's own route to an environment's reward is a
``get_reward()`` method, which it calls when each rollout finishes, while the
environment still holds that rollout's state. Every generated package therefore also
exports ``Scored<Env>`` (here ``ScoredEchoEnv``): the adapter plus ``get_reward()``,
which returns the same last-non-null reward ``outcome_reward`` computes.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import ors_server

pytest.importorskip("trl")
pytest.importorskip("tokenizers")
pytest.importorskip("aiohttp")

from async_child import run_rollouts  # noqa: E402
from generated.echo import EchoEnv, ScoredEchoEnv, load_tasks  # noqa: E402
from standin_vllm import echo_prompt, echo_tokenizer  # noqa: E402

pytestmark = pytest.mark.slow  # real training: the fast tier leaves it out


ROOT = Path(__file__).resolve().parents[1]
ECHO_ENV = ROOT / "examples" / "echo_env.py"
NUM_GENERATIONS = 4
MAX_INFLIGHT = 8  # two groups' worth of rollouts in flight at once
SAMPLES_WANTED = 3 * NUM_GENERATIONS  # three scored groups


class _SessionWatcher:
    """Polls the ORS server's open-session count in a background thread; keeps the max."""

    def __init__(self, server: ors_server.RunningServer) -> None:
        self.server = server
        self.max_open = 0
        self.polls = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="session-watcher", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.max_open = max(self.max_open, self.server.open_sessions())
                self.polls += 1
            except OSError:
                pass
            self._stop.wait(0.02)

    def __enter__(self) -> "_SessionWatcher":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@pytest.mark.timeout(300)
def test_async_rollout_loop_drives_adapter_concurrently(
    ors_servers: ors_server.Servers, tmp_path: Path
) -> None:
    started = time.monotonic()
    server = ors_servers.own(ECHO_ENV)  # its own: the request counts are this test's alone
    try:
        dataset = load_tasks(base_url=server.url)
        targets = {int(row["task_index"]): str(row["target"]) for row in dataset}
        # The tokenizer of examples/tiny_model.py (TRL's qwen3 template), trained on
        # these tasks' conversations; built from the adapter's own tool methods.
        probe = EchoEnv(base_url=server.url)
        tokenizer = echo_tokenizer([probe.echo, probe.hint], list(targets.values()))

        watcher = _SessionWatcher(server)
        run = run_rollouts(
            functools.partial(ScoredEchoEnv, base_url=server.url),
            tokenizer,
            NUM_GENERATIONS,
            MAX_INFLIGHT,
            SAMPLES_WANTED,
            dataset=dataset,
            around_start=lambda: watcher,
        )
        samples, metrics = run.samples, run.metrics

        counts = server.requests()
        # The loop's pooled adapters opened sessions, and the tool calls reached the server.
        assert counts.get("POST /create", 0) >= NUM_GENERATIONS, counts
        assert counts.get("POST /echoenv/call", 0) >= SAMPLES_WANTED, counts
        # More than one session was open at once: the loop drives adapters concurrently.
        assert watcher.polls > 0
        assert watcher.max_open > 1, f"max open sessions {watcher.max_open}"
        assert run.generator_counts["POST /v1/completions"] >= 2 * SAMPLES_WANTED

        # Every rollout: prompt from reset(), the right echo call, the env's answer, Done.
        for sample in samples:
            content = sample.prompt[-1]["content"]
            target = next(t for t in targets.values() if echo_prompt(t) in content)
            roles = [m["role"] for m in sample.completion]
            assert roles == ["assistant", "tool", "assistant"], sample.completion
            call = sample.completion[0]["tool_calls"][0]["function"]
            assert call["name"] == "echo" and call["arguments"] == {"text": target}
            assert sample.completion[1]["content"] == f"echo: {target}"
            assert sample.completion[2]["content"] == "Done."
            assert sample.metrics["reward"] == 1.0, sample.metrics
            assert sample.metrics["rewards/ScoredEchoEnv"] == 1.0, sample.metrics
            assert sample.metrics["tools/call_frequency"] == 1.0
            assert sample.metrics["tools/failure_frequency"] == 0.0
            assert sample.advantage == 0.0  # a group of equal rewards
            assert sample.completion_mask.sum() > 0
            assert len(sample.input_ids) == len(sample.completion_mask) == len(sample.old_log_probs)
        assert len({s.group_id for s in samples}) >= 3
        assert any(m.get("tools/echo/call_total", 0) > 0 for m in metrics), "no tool metrics"

        # The child exited: its runtime's exit hook closed the pooled adapters' sessions.
        assert server.wait_sessions(0, timeout=10) == 0, f"{server.open_sessions()} sessions left"
        print(
            f"\nasync rollout: {len(samples)} samples, max {watcher.max_open} sessions open at "
            f"once, {counts.get('POST /create')} sessions, "
            f"{counts.get('POST /echoenv/call')} tool calls, "
            f"{time.monotonic() - started:.1f}s wall"
        )
    finally:
        server.stop()

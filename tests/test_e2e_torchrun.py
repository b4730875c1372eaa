"""GRPO on two processes: ``torchrun --nproc_per_node 2`` on CPU (gloo), both ranks
against ONE real echo ORS server, through the generated package (examples/train_echo.py).

Each rank writes what it did (its steps and its own last batch's rewards) to a JSON file;
the server counts sessions and requests. Nothing is mocked.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import ors_server
from torchrun_launch import run_two_ranks

ROOT = Path(__file__).resolve().parents[1]
ECHO_ENV = ROOT / "examples" / "echo_env.py"
TRAIN_ECHO = ROOT / "examples" / "train_echo.py"

pytest.importorskip("trl")
pytest.importorskip("tokenizers")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_torchrun_two_ranks_train_against_one_server(
    ors_servers: ors_server.Servers, tmp_path: Path
) -> None:
    server = ors_servers.own(ECHO_ENV)  # its own: the session counts are this run's alone
    results = tmp_path / "results"
    log = tmp_path / "torchrun.log"
    started = time.monotonic()
    try:
        code, output = run_two_ranks(
            TRAIN_ECHO,
            ["--base-url", server.url, "--result-dir", str(results)],
            log,
            env={"PYTHONUNBUFFERED": "1"},
        )
        elapsed = time.monotonic() - started
        print(f"torchrun took {elapsed:.1f} s")
        assert code == 0, output[-6000:]

        # Both ranks trained every step and their own environments got rewards.
        by_rank = {}
        for rank in (0, 1):
            path = results / f"rank-{rank}.json"
            assert path.exists(), f"rank {rank} wrote no result:\n{output[-6000:]}"
            by_rank[rank] = json.loads(path.read_text())
        for rank, result in by_rank.items():
            assert result["world_size"] == 2, result
            assert result["steps"] == 2, result
            rewards = result["last_batch_rewards"]
            assert len(rewards) == 2, result  # per_device_train_batch_size rollouts
            assert 1.0 in rewards, (rank, result)

        # One server served both. Each rank's warm-up opens 4 sessions and makes 4 echo calls;
        # then 2 steps x 2 rollouts per rank reset through it, and at least one of each
        # rank's generated tool calls reached it under the wire name.
        counts = server.requests()
        assert counts.get("POST /create", 0) >= 2 * 4 + 2 * 2 * 2, counts
        assert counts.get("POST /echoenv/call", 0) >= 2 * 4 + 2, counts
        # Every rank closed what it opened (close_all at the end of training).
        assert server.wait_sessions(0, timeout=30) == 0
    finally:
        server.stop()

"""Launch a script on two CPU ranks with ``torchrun --nproc_per_node 2`` (gloo on loopback)
and wait for it, with a deadline: a hung run is stopped by its process group (all ranks)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ors_server import free_port

ROOT = Path(__file__).resolve().parents[1]


def run_two_ranks(
    script: Path,
    args: Sequence[str],
    log: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 840,
) -> tuple[int, str]:
    """Run ``script args`` on two ranks from the repository root; its exit code and output
    (stdout and stderr, also kept in ``log``). ``env`` adds to this process's environment."""
    full_env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "GLOO_SOCKET_IFNAME": "lo",  # loopback only
        **(env or {}),
    }
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
        "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
        str(script), *args,
    ]  # fmt: skip
    with log.open("wb") as out:
        # A session of its own, so a hung run can be stopped with all its ranks.
        proc = subprocess.Popen(
            command, cwd=ROOT, env=full_env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
            raise
    return code, log.read_text()

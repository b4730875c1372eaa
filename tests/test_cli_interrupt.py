"""Ctrl-C: ``orsgen: interrupted`` is the last line, exit code 130, nothing written.

A real ``python -m orsgen`` process waits on a closed loopback port and gets SIGINT, as a
terminal's Ctrl-C sends it. The runtime loop's thread keeps going until exit (its retry
reporter, the SDK import it may be in the middle of), so nothing it does may reach stderr
after the interrupt.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import ors_server
from conftest import ROOT

pytestmark = pytest.mark.timeout(180)


def _default_sigint() -> None:
    # A shell's background jobs ignore SIGINT, and Python then installs no handler for it;
    # a terminal's foreground orsgen has the default one.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupted_when(ready: Callable[[str], bool], out: Path) -> tuple[list[str], str, int]:
    """Run orsgen against a closed port, send SIGINT once a stderr line satisfies ``ready``;
    returns the lines before the signal, the stderr after it, and the exit code."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
    env.update({"OPENREWARD_DISABLE_UPDATE_CHECK": "1", "OPENREWARD_LOG_LEVEL": "WARNING"})
    url = f"http://127.0.0.1:{ors_server.free_port()}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "orsgen", url, "-o", str(out)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    try:
        assert proc.stderr is not None
        before: list[str] = []
        for line in proc.stderr:
            before.append(line)
            if ready(line):
                break
        proc.send_signal(signal.SIGINT)
        after = proc.stderr.read()
        return before, after, proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    "when",
    [
        # The loop thread is still importing the SDK: it would go on to connect and retry.
        "connecting",
        # The SDK sleeps before its second attempt.
        pytest.param("waiting to retry", marks=pytest.mark.slow),
    ],
)
def test_ctrl_c_is_the_last_line_and_exits_130(when: str, tmp_path: Path) -> None:
    marker = "connecting to " if when == "connecting" else "retrying in 1 s"
    out = tmp_path / "pkg"
    before, after, code = _interrupted_when(lambda line: marker in line, out)
    assert marker in before[-1], before
    assert after == "orsgen: interrupted\n", (before, after)
    assert code == 130
    assert not out.exists()


def test_the_in_process_cli_still_reaches_its_server_after_a_fork(
    orsgen_cli, echo_server, tmp_path: Path
) -> None:
    """The order that once hung the suite (test_cli_file_target.py, this file,
    test_cli_names.py): an in-process run leaves a keep-alive connection in the runtime's
    pool, the Ctrl-C test forks this process to start orsgen (``preexec_fn``), and the next
    in-process run asks its server over that connection. The child must not have torn down
    the runtime it inherited (tests/test_runtime_process.py says why)."""
    first = orsgen_cli([echo_server.url, "-o", str(tmp_path / "first"), "-q"])
    assert first.code == 0, first.stderr
    _interrupted_when(lambda line: "connecting to " in line, tmp_path / "interrupted")
    run = orsgen_cli([echo_server.url, "-o", str(tmp_path / "second"), "-q", "--timeout", "20"])
    assert run.code == 0, run.stderr

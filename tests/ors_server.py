"""Start and stop real ORS servers (tests/serve_env.py) on 127.0.0.1, by PID."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# examples/serve_model.py: one way to choose a port and to stop what a test started.
from serve_model import free_port, stop_process

ROOT = Path(__file__).resolve().parents[1]
SERVE = ROOT / "tests" / "serve_env.py"


@dataclass
class RunningServer:
    url: str
    env: str  # the environment name used for the stats routes
    process: subprocess.Popen[bytes]
    log: Path
    args: list[str] = field(default_factory=list)

    def _json(self, method: str, path: str) -> Any:
        req = urllib.request.Request(
            f"{self.url}{path}", method=method, data=b"" if method == "POST" else None
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def stats(self) -> dict[str, Any]:
        return dict(self._json("GET", f"/{self.env}/_stats"))

    def open_sessions(self) -> int:
        return int(self.stats()["sessions"])

    def requests(self) -> dict[str, int]:
        return dict(self.stats()["requests"])

    def connections(self) -> dict[str, int]:
        """How many requests to each route came over a new TCP connection (a client address
        and port not seen before): a pooled connection that is reused does not count."""
        return dict(self.stats().get("connections", {}))

    def deployments(self) -> dict[str, int]:
        """How many requests carried each ``X-Deployment`` header value."""
        return dict(self.stats().get("deployments", {}))

    def secret_names(self) -> dict[str, int]:
        """How many requests carried each secret name in ``X-Secrets`` (names only)."""
        return dict(self.stats().get("secret_names", {}))

    def env_overrides(self) -> dict[str, str]:
        """env_overrides names seen at /create_session, each with the sha256 of its value."""
        return dict(self.stats().get("env_overrides", {}))

    def reset_counts(self) -> None:
        self._json("POST", f"/{self.env}/_stats/reset")

    def wait_sessions(self, expected: int, timeout: float = 10.0) -> int:
        """Sessions close asynchronously on the server; poll until the count settles."""
        return settle(self.open_sessions, expected, timeout)

    def stop(self) -> None:
        stop_process(self.process)


def settle(read: Callable[[], int], expected: int, timeout: float = 10.0) -> int:
    """Poll ``read`` until it returns ``expected`` or ``timeout`` passes; its last value."""
    deadline = time.monotonic() + timeout
    n = read()
    while n != expected and time.monotonic() < deadline:
        time.sleep(0.05)
        n = read()
    return n


def start(
    env_file: Path | str,
    envs: list[str] | None = None,
    port: int | None = None,
    reaper: float | None = None,
    log_dir: Path | None = None,
    timeout: float = 60.0,
    drop_routes: list[str] | None = None,
) -> RunningServer:
    """Start a server; with no fixed port, retry on a fresh one when another process took
    the chosen port between choosing and binding (several test runs share this machine)."""
    attempts = 1 if port else 4
    for attempt in range(attempts):
        try:
            return _start_once(
                env_file, envs, port or free_port(), reaper, log_dir, timeout, drop_routes
            )
        except _PortTaken:
            if attempt == attempts - 1:
                raise RuntimeError("ORS server could not bind a free port") from None
    raise AssertionError("unreachable")


class _PortTaken(Exception):
    pass


def _start_once(
    env_file: Path | str,
    envs: list[str] | None,
    port: int,
    reaper: float | None,
    log_dir: Path | None,
    timeout: float,
    drop_routes: list[str] | None,
) -> RunningServer:
    args = [sys.executable, str(SERVE), str(env_file), "--port", str(port)]
    if envs:
        args += ["--envs", ",".join(envs)]
    if reaper is not None:
        args += ["--reaper", str(reaper)]
    if drop_routes:
        args += ["--drop-routes", ",".join(drop_routes)]
    log = (log_dir or Path(os.environ.get("TMPDIR", "/tmp"))) / f"ors-server-{port}.log"
    env = {**os.environ, "OPENREWARD_DISABLE_UPDATE_CHECK": "1", "OPENREWARD_LOG_LEVEL": "WARNING"}
    with log.open("wb") as fh:
        process = subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    first = envs[0] if envs else None
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            text = log.read_text()
            if "address already in use" in text.lower():
                raise _PortTaken()
            raise RuntimeError(f"ORS server exited early:\n{text}")
        try:
            with urllib.request.urlopen(f"{url}/list_environments", timeout=1) as resp:
                names = json.loads(resp.read())
            env_name = (first or names[0]).lower()
            with urllib.request.urlopen(f"{url}/{env_name}/_stats", timeout=5) as resp:
                pid = json.loads(resp.read()).get("pid")
            if pid != process.pid:
                # Someone else's server answered on this port; ours failed to bind.
                process.terminate()
                process.wait(timeout=10)
                raise _PortTaken()
            break
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                process.terminate()
                process.wait(timeout=10)
                raise RuntimeError(f"ORS server did not start:\n{log.read_text()}")
            time.sleep(0.1)
    return RunningServer(url=url, env=env_name, process=process, log=log, args=args)


class Servers:
    """Every ORS server the test session starts (conftest's ``ors_servers`` fixture).

    ``servers(env_file, ...)`` is the session's shared server for those options, started on
    first use: tests that only read their own counts (``base = open_sessions()``) share it.
    ``servers.own(env_file, ...)`` is a server for one caller alone, which it may stop or
    restart on its port. Whatever is still running at the end of the session is stopped by
    PID, so a failing test leaves no server behind.
    """

    def __init__(self, log_dir: Path) -> None:
        self._log_dir = log_dir
        self._shared: dict[tuple[Any, ...], RunningServer] = {}
        self._started: list[RunningServer] = []

    def __call__(
        self,
        env_file: Path | str,
        *,
        envs: Sequence[str] = (),
        reaper: float | None = None,
        drop_routes: Sequence[str] = (),
    ) -> RunningServer:
        key = (str(env_file), tuple(envs), reaper, tuple(drop_routes))
        if key not in self._shared:
            self._shared[key] = self.own(
                env_file, envs=envs, reaper=reaper, drop_routes=drop_routes
            )
        return self._shared[key]

    def own(
        self,
        env_file: Path | str,
        *,
        envs: Sequence[str] = (),
        reaper: float | None = None,
        drop_routes: Sequence[str] = (),
        port: int | None = None,
    ) -> RunningServer:
        server = start(
            env_file,
            envs=list(envs) or None,
            port=port,
            reaper=reaper,
            log_dir=self._log_dir,
            drop_routes=list(drop_routes) or None,
        )
        self._started.append(server)
        return server

    def stop_all(self) -> None:
        for server in self._started:
            server.stop()

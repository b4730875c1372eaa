"""Training survives an environment outage: orsgen/runtime/transport/health.py's records and call
policy on a real server (the same rules on an injected clock: tests/test_runtime_health.py).

Real echo ORS servers, stopped by PID and restarted on the same port. Most tests use a
short ``reconnect_for`` so the outage can be short; ``test_30s_outage_at_default_settings``
is the acceptance run at default settings.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import ors_server
import pytest
from conftest import ECHO_ENV, failed

from generated.echo import EchoEnv, ScoredEchoEnv, outcome_reward
from orsgen.runtime.adapter import UNAVAILABLE_PROMPT
from orsgen.runtime.errors import EnvironmentUnavailableError, SessionOpenError, ToolCallFailure

pytestmark = [pytest.mark.usefixtures("fresh_runtime"), pytest.mark.timeout(300)]

TARGETS = ["apple", "banana", "cherry", "damson"]


@dataclass
class Outage:
    """One echo server of this test's own that can be stopped and restarted on its port."""

    servers: ors_server.Servers
    server: ors_server.RunningServer
    restarts: list[ors_server.RunningServer] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def stop(self) -> None:
        self.server.stop()

    def restart(self) -> ors_server.RunningServer:
        self.server = self.servers.own(ECHO_ENV, port=self.port)
        return self.server

    def restart_after(self, seconds: float) -> threading.Thread:
        thread = threading.Thread(target=lambda: (time.sleep(seconds), self.restart()))
        thread.start()
        return thread


@pytest.fixture()
def outage(ors_servers: ors_server.Servers) -> Iterator[Outage]:
    out = Outage(ors_servers, ors_servers.own(ECHO_ENV))
    try:
        yield out
    finally:
        out.server.stop()


def _lines(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


@pytest.mark.slow
def test_reset_rides_out_a_restart(outage: Outage, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    env = EchoEnv(base_url=outage.url, reconnect_for=60, prefetch=False)
    assert "apple" in env.reset(task_index=0)  # the process reached the server once
    outage.stop()
    # Down longer than the SDK's own retries for opening a session (about 3.5 s).
    restarting = outage.restart_after(6.0)
    try:
        assert "banana" in env.reset(task_index=1)  # waited, then opened on the new server
        assert env.echo(text="banana") == "echo: banana" and outcome_reward([env]) == [1.0]
    finally:
        restarting.join()
        env.close()
    assert len(_lines(caplog, "stopped answering")) == 1, caplog.text
    back = _lines(caplog, "answers again after")
    assert len(back) == 1 and outage.url in back[0], caplog.text
    assert outage.server.wait_sessions(0) == 0


def test_first_reset_against_a_server_that_never_answered_fails_fast() -> None:
    url = f"http://127.0.0.1:{ors_server.free_port()}"
    start = time.monotonic()
    with pytest.raises(SessionOpenError, match="cannot connect"):
        EchoEnv(base_url=url).reset(task_index=0)  # default reconnect_for=300
    assert time.monotonic() - start < 20  # the acceptance bound, not a tight timing


@pytest.mark.slow
def test_degrades_after_the_window_and_recovers(
    outage: Outage, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    envs = [ScoredEchoEnv(base_url=outage.url, reconnect_for=2.0, prefetch=False) for _ in range(3)]
    for env in envs:
        env.reset(task_index=0)
    before = ScoredEchoEnv.degraded_rollouts()
    outage.stop()
    for env in envs:  # no raise: a short prompt, tools that say so, no reward
        assert env.reset(task_index=1) == UNAVAILABLE_PROMPT
        assert str(failed(env.echo, text="banana")) == (
            "tool 'echo' failed in the environment (unavailable): environment unavailable; "
            "this episode is not scored"
        )
        assert env.get_reward() is None
    assert outcome_reward(envs) == [None, None, None]
    assert ScoredEchoEnv.degraded_rollouts() - before == 3
    assert EchoEnv.degraded_rollouts() >= 3  # counted for the family
    assert len(_lines(caplog, "run degraded")) == 1, caplog.text  # once per stretch
    strict = EchoEnv(base_url=outage.url, reconnect_for=1.0, strict=True, prefetch=False)
    with pytest.raises(EnvironmentUnavailableError, match="reconnect_for=1"):
        strict.reset(task_index=1)
    outage.restart()
    for env in envs:
        assert "cherry" in env.reset(task_index=2)
        env.echo(text="cherry")
        assert env.get_reward() == 1.0
    back = _lines(caplog, "answers again after")
    assert len(back) == 1 and "3 rollout(s) ran degraded" in back[0], caplog.text
    for env in envs:
        env.close()
    assert outage.server.wait_sessions(0) == 0


@pytest.mark.slow
def test_a_session_lost_in_a_restart(outage: Outage, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    pinged = EchoEnv(base_url=outage.url, keepalive=0.5, prefetch=False)  # the pinger finds out
    called = EchoEnv(base_url=outage.url, keepalive=30, prefetch=False)  # a tool call finds out
    pinged.reset(task_index=0)
    called.reset(task_index=0)
    assert called.echo(text="pear") == "echo: pear"  # a real score first: 0.0
    sids = [pinged._slot.session.sid, called._slot.session.sid]
    outage.stop()
    server = outage.restart()
    deadline = time.monotonic() + 30
    while not _lines(caplog, sids[0]) and time.monotonic() < deadline:
        time.sleep(0.2)
    out = str(failed(called.echo, text="apple"))
    assert out.startswith(
        "tool 'echo' failed in the environment (lost_session): HTTP 404: Active environment not found"
    ), out
    assert called.finished and outcome_reward([called]) == [None]  # finished, unscored
    assert str(failed(pinged.echo, text="apple")).startswith(
        "tool 'echo' failed in the environment (lost_session): HTTP 404"
    )
    assert pinged.finished and outcome_reward([pinged]) == [None]
    pings = server.requests().get("POST /ping", 0)
    time.sleep(2.0)  # four of pinged's keepalive intervals
    assert server.requests().get("POST /ping", 0) == pings  # nobody pings a lost session
    for sid in sids:  # one line per lost session, and no SDK "Ping failed" lines
        assert len(_lines(caplog, sid)) == 1, caplog.text
    assert not _lines(caplog, "Ping failed"), caplog.text
    pinged.close()
    called.close()


def _rollouts(
    envs: list[EchoEnv], stop: threading.Event, log: list[tuple[float, float, float | None]]
) -> None:
    """A trainer's rollout loop: reset plus one tool call per adapter, round after round,
    each logged as (start, end, reward). As in TRL, a tool call's counted failure
    (``ToolCallFailure``) is caught; anything else, and anything ``reset()`` raises, reaches
    the caller."""
    task = 0
    while not stop.is_set():
        for env in envs:
            start = time.monotonic()
            env.reset(task_index=task % len(TARGETS))
            try:
                env.echo(text=TARGETS[task % len(TARGETS)])
            except ToolCallFailure:
                pass
            log.append((start, time.monotonic(), outcome_reward([env])[0]))
            task += 1


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_30s_outage_at_default_settings(outage: Outage, caplog: pytest.LogCaptureFixture) -> None:
    """The acceptance run: four adapters at default settings in a rollout loop, the
    server stopped for 30 s and restarted on the same port."""
    caplog.set_level(logging.WARNING)
    envs = [EchoEnv(base_url=outage.url) for _ in range(4)]
    stop, log, errors = threading.Event(), [], []  # type: ignore[var-annotated]

    def loop() -> None:
        try:
            _rollouts(envs, stop, log)
        except BaseException as exc:  # noqa: BLE001 - the assertion below reports it
            errors.append(exc)

    worker = threading.Thread(target=loop)
    worker.start()
    try:
        while len(log) < 8 and not errors:
            time.sleep(0.1)
        outage.stop()
        down_at = time.monotonic()
        time.sleep(30.0)
        outage.restart()
        back_at = time.monotonic()
        while len([1 for start, _, _ in log if start > back_at]) < 8 and not errors:
            if time.monotonic() - back_at > 240:
                break
            time.sleep(0.2)
    finally:
        stop.set()
        worker.join(timeout=300)
    assert not errors, errors  # no exception reached the caller
    # The rollouts the outage hit: under way at some moment while the server was down.
    during = [r for start, end, r in log if start <= back_at and end >= down_at]
    after = [r for start, _, r in log if start > back_at]
    assert during and all(r in (None, 1.0) for r in during), during
    assert len(after) >= 8 and all(r == 1.0 for r in after), after
    recovered = [r.getMessage() for r in caplog.records if "answers again after" in r.getMessage()]
    print("log lines:", *[r.getMessage() for r in caplog.records], sep="\n  ")
    print(
        f"recovered {time.monotonic() - back_at:.1f} s after the restart; rollouts: "
        f"{len(during)} during (rewards {during}), {len(after)} after"
    )
    assert len(recovered) == 1, caplog.text
    for env in envs:
        env.close()
    lost = [r.getMessage() for r in caplog.records if "was lost" in r.getMessage()]
    sids = [m.split()[2] for m in lost]
    assert len(sids) == len(set(sids)), lost  # at most one line per lost session
    assert not _lines(caplog, "Ping failed"), caplog.text
    assert outage.server.wait_sessions(0) == 0

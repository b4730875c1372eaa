"""A snapshot's probe sessions send no keepalive ping: they open with the runtime's session
class, whose pings wait an interval before the first. The SDK's own class pinged at once,
from another thread, so the ping could reach the server after the probe deleted the session
and the server logged a rejected request (on the user's terminal for ``orsgen FILE.py``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import ors_server
from orsgen.generate.pipeline.run import Request, run


def test_probe_sessions_are_deleted_without_a_ping(
    tmp_path: Path, echo_server: ors_server.RunningServer, capacity_proxy: Callable[..., Any]
) -> None:
    proxy = capacity_proxy(echo_server.url)  # no limit: it only counts the requests
    result = run(Request(proxy.url, tmp_path / "echo", probe_indices=(0, 1)))
    assert result.written, [d.format() for d in result.diagnostics]
    time.sleep(0.5)  # a ping already on its way would have arrived by now
    stats = proxy.stats()
    assert (stats["created"], stats["deleted"], stats["open"]) == (2, 2, 0), stats
    assert "POST /ping" not in stats["requests"], stats["requests"]

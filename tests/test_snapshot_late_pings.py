"""The in-process server answers a ping for a session deleted through it without a log line
(the SDK's first keepalive ping can land just after a probe session closed)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import ECHO_ENV
from orsgen.snapshot.local import serve_file

# Loopback never goes through an HTTP proxy, whatever *_proxy variables say.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def post(url: str, sid: str) -> tuple[int, object]:
    request = urllib.request.Request(url, data=b"{}", method="POST", headers={"X-Session-ID": sid})
    try:
        with OPENER.open(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_ping_after_delete_gets_the_servers_404_and_prints_nothing(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with serve_file(Path(ECHO_ENV)) as (url, _):
        capfd.readouterr()  # whatever start-up printed is not this test's subject
        assert post(f"{url}/delete", "gone-1")[0] == 200
        assert post(f"{url}/ping", "gone-1") == (404, {"detail": "Active environment not found"})
        quiet = capfd.readouterr()
        # A session never deleted through the server still reaches the SDK's own handler.
        assert post(f"{url}/ping", "never-opened") == (
            404,
            {"detail": "Active environment not found"},
        )
    assert quiet.out == "" and quiet.err == "", quiet
    assert "request_rejected" in capfd.readouterr().out

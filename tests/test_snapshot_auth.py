"""A server that turns the API key down (HTTP 401) while orsgen reads its environments: one
line that says so and how to give a key, the SDK's own 401 recognised through
orsgen/runtime/transport/sdk.py (the one module that names the SDK's private session code)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


class _Refusing(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _refuse(self) -> None:
        body = b'{"detail": "invalid API key"}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _refuse


@pytest.fixture()
def refusing_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_rejected_api_key_is_one_line_that_says_how_to_give_one(
    orsgen_subprocess: Callable[..., Any], refusing_server: str, tmp_path: Path
) -> None:
    run = orsgen_subprocess([refusing_server, "-o", str(tmp_path / "pkg")])
    assert run.code != 0
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert "Traceback" not in run.stderr, run.stderr
    assert any("rejected the API key (HTTP 401)" in line for line in lines), run.stderr
    assert any("OPENREWARD_API_KEY" in line and "--api-key" in line for line in lines)
    assert not (tmp_path / "pkg").exists()

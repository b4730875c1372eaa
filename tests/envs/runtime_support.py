"""Helpers for the runtime tests: a hand-written adapter for runtime_fault_env.py, a
fault-injecting HTTP proxy (raw sockets) for the HTTP 500 and cut-SSE cases, and
module-level worker functions that spawned processes can import."""

from __future__ import annotations

import asyncio
import functools
import threading
from pathlib import Path
from typing import Any, ClassVar

from orsgen.runtime.adapter import OrsAdapter

ENVS = Path(__file__).resolve().parent
FAULT_ENV = ENVS / "runtime_fault_env.py"
DRIFT_ENV = ENVS / "runtime_drift_env.py"


class FaultAdapter(OrsAdapter):
    """What orsgen would generate for runtime_fault_env.py (no snapshot: no drift guard)."""

    ENV_NAME: ClassVar[str | None] = "faultenv"
    WIRE_NAMES: ClassVar[dict[str, tuple[str, dict[str, str]]]] = {
        "ok": ("ok", {"text": "text"}),
        "slow": ("slow", {"seconds": "seconds"}),
        "boom": ("boom", {"text": "text"}),
        "die": ("die", {"text": "text"}),
    }

    def ok(self, text: str = "") -> str:
        """Answer at once.

        Args:
            text: Anything.
        """
        return self._call("ok", {"text": text})

    def slow(self, seconds: float) -> str:
        """Sleep, then answer.

        Args:
            seconds: How long to sleep.
        """
        return self._call("slow", {"seconds": seconds})

    def boom(self, text: str = "") -> str:
        """Raise on the server.

        Args:
            text: Anything.
        """
        return self._call("boom", {"text": text})

    def die(self, text: str = "") -> str:
        """Kill the server mid-call.

        Args:
            text: Anything.
        """
        return self._call("die", {"text": text})


class FaultProxy:
    """A loopback HTTP proxy in front of a real ORS server that can break ``/call``.

    Modes for requests whose path ends with ``/call``: ``"pass"``; ``"500"`` answers
    HTTP 500 itself; ``"cut"`` forwards the request and relays the SSE answer only up
    to the ``task_id`` event, then drops the connection (mid-answer); ``"cut_once"``
    cuts the first such answer and passes the rest. One request per connection.
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.mode = "pass"
        self.cut = 0
        self.injected = 0
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.base_events.Server | None = None
        self._thread = threading.Thread(target=self._main, daemon=True, name="fault-proxy")
        self._thread.start()
        self._ready.wait(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def close(self) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head[:-4].split(b"\r\n")
            path = lines[0].split(b" ")[1].decode()
            headers = [ln for ln in lines[1:] if not ln.lower().startswith(b"connection:")]
            length = 0
            for ln in headers:
                if ln.lower().startswith(b"content-length:"):
                    length = int(ln.split(b":", 1)[1])
            body = await reader.readexactly(length) if length else b""
            mode = self.mode if path.endswith("/call") else "pass"
            if mode == "cut_once":
                mode = "cut" if self.cut == 0 else "pass"
            if mode == "500":
                self.injected += 1
                payload = b'{"detail":"injected by the fault proxy"}'
                writer.write(
                    b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\n"
                    + f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n".encode()
                    + payload
                )
                await writer.drain()
                return
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
            up_w.write(
                b"\r\n".join([lines[0], *headers, b"Connection: close"]) + b"\r\n\r\n" + body
            )
            await up_w.drain()
            if mode == "cut":
                buf = b""
                while b"task_id" not in buf or buf.find(b"\r\n\r\n", buf.find(b"task_id")) < 0:
                    chunk = await up_r.read(65536)
                    if not chunk:
                        break
                    buf += chunk
                end = buf.find(b"\r\n\r\n", buf.find(b"task_id")) + 4
                writer.write(buf[:end])
                await writer.drain()
                self.cut += 1
                writer.transport.abort()
                up_w.transport.abort()
                return
            while True:
                chunk = await up_r.read(65536)
                if not chunk:
                    break
                writer.write(chunk)
                await writer.drain()
            up_w.close()
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            if not writer.transport.is_closing():
                writer.close()


def spawned_rollout(factory: Any, task_index: int, word: str, close: bool) -> tuple[str, str, Any]:
    """Run one rollout in a (spawned) worker process with a pickled factory."""
    env = factory()
    prompt = env.reset(task_index=task_index)
    out = env.echo(text=word)
    reward = env.reward
    if close:
        env.close()
    return prompt, out, reward


def partial_echo(url: str, **kw: Any) -> Any:
    from generated.echo import EchoEnv

    return functools.partial(EchoEnv, base_url=url, **kw)

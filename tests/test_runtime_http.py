"""The transport under the SDK (orsgen/runtime/transport/http.py): finished streams give their connection
back to the pool (so a tool call does not pay for a new TCP connection), a late or
never-ending stream never leaks or hangs, and proxy/netrc lookups stay on exactly when
the environment could change a request.

The HTTP-level cases use a small aiohttp server on 127.0.0.1 whose timing they control;
the end-to-end case counts connections on a real ORS server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import runtime_hooks
from aiohttp import web

from generated.echo import EchoEnv
from orsgen.runtime.transport import http

pytestmark = pytest.mark.usefixtures("fresh_runtime")


class Stream:
    """A server whose ``/stream`` answers with a first chunk, then, ``delay`` seconds later
    and once ``release`` is set, its final chunk: as an SSE server does, just after the
    client has stopped reading. It records the client port of each request: one port per
    TCP connection."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.delay = 0.05
        self.ports: list[int] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        self.ports.append(request.transport.get_extra_info("peername")[1])
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"event: end\ndata: {}\n\n")
        await asyncio.sleep(self.delay)
        await self.release.wait()
        await response.write(b": final\n\n")
        await response.write_eof()
        return response


@asynccontextmanager
async def stream_server() -> AsyncIterator[tuple[Stream, str]]:
    stream = Stream()
    app = web.Application()
    app.router.add_post("/stream", stream.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield stream, f"http://127.0.0.1:{port}"
    finally:
        stream.release.set()
        await runner.cleanup()


async def read_first_event(client: Any) -> None:
    """What the SDK's SSE reader does: stop at the ``end`` event, body not read to EOF."""
    async with client.post("/stream") as response:
        assert await response.content.readline() == b"event: end\n"


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(test(), 30))  # a guard against hangs, not a timing assert


def test_finished_streams_reuse_one_connection() -> None:
    async def body() -> None:
        async with stream_server() as (stream, url):
            stream.release.set()
            client = http.DrainingClient(http.make_session(url))
            for _ in range(5):
                await read_first_event(client)
                await asyncio.gather(*client._drains)  # the final chunk, read in the background
            await client.close()
            assert len(set(stream.ports)) == 1, stream.ports

            # The same requests on the bare aiohttp session close their connection every time.
            stream.ports.clear()
            plain = http.make_session(url)
            for _ in range(5):
                await read_first_event(plain)
            await plain.close()
            assert len(set(stream.ports)) == 5, stream.ports

    run(body)


def test_body_already_arrived_is_released_without_a_background_read() -> None:
    async def body() -> None:
        async with stream_server() as (stream, url):
            stream.delay = 0.0
            stream.release.set()
            client = http.DrainingClient(http.make_session(url))
            for _ in range(3):
                async with client.post("/stream") as response:
                    assert await response.content.readline() == b"event: end\n"
                    await response.content.wait_eof()  # the final chunk, on its way (not read)
                assert not client._drains
            await client.close()
            assert len(set(stream.ports)) == 1, stream.ports

    run(body)


def test_final_chunk_that_never_comes_is_given_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http, "DRAIN_TIMEOUT", 0.2)

    async def body() -> None:
        async with stream_server() as (stream, url):
            client = http.DrainingClient(http.make_session(url))
            await read_first_event(client)
            assert len(client._drains) == 1
            await asyncio.gather(*client._drains)
            assert not client._drains
            connector = client.connector
            assert connector is not None and not connector._conns  # closed, not pooled
            stream.release.set()
            await read_first_event(client)
            await client.close()
            assert len(set(stream.ports)) == 2, stream.ports

    run(body)


def test_close_cancels_pending_drains() -> None:
    async def body() -> None:
        async with stream_server() as (stream, url):
            client = http.DrainingClient(http.make_session(url))
            await read_first_event(client)
            (drain,) = client._drains
            await client.close()  # the server still holds the final chunk back
            assert drain.cancelled() and not client._drains and client.closed

    run(body)


def test_error_inside_releases_at_once() -> None:
    async def body() -> None:
        async with stream_server() as (_stream, url):
            client = http.DrainingClient(http.make_session(url))
            with pytest.raises(RuntimeError, match="caller gave up"):
                async with client.post("/stream") as response:
                    await response.content.readline()
                    raise RuntimeError("caller gave up")
            assert not client._drains and response.closed
            await client.close()

    run(body)


def test_tool_calls_reuse_connections_on_a_real_server(echo_server) -> None:
    env = EchoEnv(base_url=echo_server.url, prefetch=False)
    env.reset(task_index=0)
    echo_server.reset_counts()
    for _ in range(20):
        env.echo(text="pear")
    env.close()
    opened = echo_server.connections().get("POST /echoenv/call", 0)
    # A call may start before the previous call's final chunk is read, so a second
    # connection can join the pool; without the drain every call opens its own.
    assert opened <= 2, echo_server.connections()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No proxy variable, no NETRC, and a home directory without a .netrc."""
    import os

    for name in list(os.environ):
        if name.lower().endswith("_proxy") or name == "NETRC":
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    return monkeypatch


def test_environment_lookups_off_without_proxy_or_netrc(clean_env: pytest.MonkeyPatch) -> None:
    assert not http.uses_environment("http://127.0.0.1:8080")


@pytest.mark.parametrize(
    ("variables", "url", "expected"),
    [
        ({"HTTP_PROXY": "http://proxy.invalid:3128"}, "http://ors.invalid", True),
        ({"http_proxy": "http://proxy.invalid:3128"}, "http://ors.invalid", True),
        ({"HTTPS_PROXY": "http://proxy.invalid:3128"}, "http://ors.invalid", False),
        ({"HTTPS_PROXY": "http://proxy.invalid:3128"}, "https://ors.invalid", True),
        (
            {"HTTP_PROXY": "http://proxy.invalid:3128", "NO_PROXY": "ors.invalid"},
            "http://ors.invalid",
            False,
        ),
        (
            {"HTTP_PROXY": "http://proxy.invalid:3128", "NO_PROXY": "other.invalid"},
            "http://ors.invalid",
            True,
        ),
    ],
)
def test_environment_lookups_follow_proxy_settings(
    clean_env: pytest.MonkeyPatch, variables: dict[str, str], url: str, expected: bool
) -> None:
    for name, value in variables.items():
        clean_env.setenv(name, value)
    assert http.uses_environment(url) is expected


def test_environment_lookups_on_with_a_netrc(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".netrc").write_text("machine ors.invalid login u password p\n")
    assert http.uses_environment("http://ors.invalid")
    (tmp_path / ".netrc").unlink()
    clean_env.setenv("NETRC", str(tmp_path / "elsewhere"))
    assert http.uses_environment("http://ors.invalid")


def test_session_trusts_environment_only_when_it_applies(clean_env: pytest.MonkeyPatch) -> None:
    async def body() -> None:
        quiet = http.make_session("http://127.0.0.1:1")
        clean_env.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
        proxied = http.make_session("http://127.0.0.1:1")
        try:
            assert (quiet.trust_env, proxied.trust_env) == (False, True)
        finally:
            await quiet.close()
            await proxied.close()

    run(body)


def test_one_client_per_url_shared_by_adapters(echo_server) -> None:
    first = EchoEnv(base_url=echo_server.url, prefetch=False)
    second = EchoEnv(base_url=echo_server.url, prefetch=False)
    first.reset(task_index=0)
    second.reset(task_index=1)
    assert runtime_hooks.clients_for(echo_server.url) == 1
    first.close()
    second.close()

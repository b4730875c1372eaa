"""The aiohttp clients the openreward SDK runs on: one per server URL and process, closed at
shutdown after the sessions that use them. Why they drain streams and decide ``trust_env`` once:
docs/scale.md, "Connections" and "Proxies and netrc".
"""

from __future__ import annotations

import asyncio
import os
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from orsgen.runtime.transport.process import Process, at_shutdown, current

if TYPE_CHECKING:  # aiohttp loads with the first client, not with a generated package
    import aiohttp

# How long a finished stream may take to deliver its final chunk before the
# connection is closed instead of reused (the server normally sends it at once).
DRAIN_TIMEOUT = 5.0
CLIENTS_BUDGET = 5.0
# Shutdown order: after the sessions (pool), which still need the clients.
SHUTDOWN_ORDER = 20


def uses_environment(url: str) -> bool:
    """Whether aiohttp's ``trust_env`` could change a request to ``url``: a proxy for its
    scheme not bypassed for its host, or a netrc file."""
    # Here, not at module level: urllib.request pulls in http.client, email and tempfile,
    # a sixth of a generated package's cold import, for a check made once per client.
    import urllib.request

    parsed = urlparse(url)
    proxies = urllib.request.getproxies()
    if parsed.scheme in proxies and not urllib.request.proxy_bypass(parsed.hostname or ""):
        return True
    if os.environ.get("NETRC"):
        return True
    try:
        return (Path.home() / ".netrc").exists()
    except RuntimeError:  # no resolvable home directory
        return False


def make_session(base_url: str) -> aiohttp.ClientSession:
    """A client as ``AsyncEnvironmentsAPI.get`` makes its own; on the runtime loop only."""
    import aiohttp

    return aiohttp.ClientSession(
        base_url=base_url,
        timeout=aiohttp.ClientTimeout(total=None),
        connector=aiohttp.TCPConnector(limit=1_000_000),
        trust_env=uses_environment(base_url),
    )


class DrainingClient:
    """An ``aiohttp.ClientSession`` whose ``post`` streams are read to their end, so their
    connections are reused."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self._session = session
        self._drains: set[asyncio.Task[None]] = set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def post(self, *args: Any, **kwargs: Any) -> _Drained:
        return _Drained(self, self._session.post(*args, **kwargs))

    def track_drain(self, task: asyncio.Task[None]) -> None:
        """Keep a background drain until it ends (``close`` cancels what is left)."""
        self._drains.add(task)
        task.add_done_callback(self._drains.discard)

    async def close(self) -> None:
        for task in list(self._drains):
            task.cancel()
        await asyncio.gather(*self._drains, return_exceptions=True)
        await self._session.close()


class _Drained:
    """``async with client.post(...)``: on a clean exit the unread body is read by a background
    task, which then releases the connection; on an exception it is released at once."""

    def __init__(
        self, owner: DrainingClient, request: AbstractAsyncContextManager[aiohttp.ClientResponse]
    ) -> None:
        self._owner = owner
        self._request = request
        self._response: aiohttp.ClientResponse | None = None

    async def __aenter__(self) -> aiohttp.ClientResponse:
        self._response = await self._request.__aenter__()
        return self._response

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        response = self._response
        # Once the whole body has arrived (read or not) aiohttp keeps the connection on
        # release; only a body still arriving needs the background read.
        if exc_type is None and response is not None and not response.content.is_eof():
            task = asyncio.get_running_loop().create_task(self._drain(response))
            self._owner.track_drain(task)
            return
        await self._request.__aexit__(exc_type, exc, tb)

    async def _drain(self, response: aiohttp.ClientResponse) -> None:
        try:
            async with asyncio.timeout(DRAIN_TIMEOUT):
                while await response.content.readany():
                    pass
        except asyncio.CancelledError:
            response.close()
            raise
        except Exception:  # noqa: BLE001 - late or cut: just do not reuse the connection
            response.close()
        finally:
            await self._request.__aexit__(None, None, None)


class Clients(dict[str, DrainingClient]):
    """The process's clients by server URL; made and used on the loop thread only."""


def client(url: str) -> DrainingClient:
    """The process's HTTP client for a server URL; on the runtime loop."""
    clients = current().part(Clients)
    found = clients.get(url)
    if found is None:
        found = clients[url] = DrainingClient(make_session(url))
    return found


def forget(url: str) -> None:
    """Close and drop the client of a server going away for good (a local file's): a later
    server on the same port would otherwise get its pooled connections, and hang on them."""
    process = current()
    found = process.part(Clients).pop(url, None)
    if found is not None:
        process.run(found.close(), timeout=CLIENTS_BUDGET)


async def _close_all(clients: Clients) -> None:
    while clients:
        _, found = clients.popitem()
        await found.close()


def _close_clients(process: Process) -> None:
    clients = process.part(Clients)
    if clients:
        process.run(_close_all(clients), timeout=CLIENTS_BUDGET)


at_shutdown(SHUTDOWN_ORDER, _close_clients)

"""Answer a keepalive ping that arrives after its session was deleted, without a log line.

The SDK pings a session from a thread of its own, the first time right after the session
opens. A probe session lives for a few milliseconds, so that first ping can reach the
in-process server after the probe deleted the session. The SDK's server then answers 404
and logs a ``request_rejected`` warning onto the user's terminal, at random. This wrapper
remembers the sessions deleted through it and gives their late pings the same 404 itself.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

DELETE_PATHS = frozenset({"/delete", "/delete_session"})
# The body and status the SDK's server gives a ping for a session it does not hold.
GONE = json.dumps({"detail": "Active environment not found"}).encode()


class LatePings:
    """An ASGI app in front of the SDK's server app; every other request passes through."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.deleted: set[str] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            sid = _session_id(scope)
            if sid is not None and scope["path"] in DELETE_PATHS:
                self.deleted.add(sid)
            elif sid is not None and scope["path"] == "/ping" and sid in self.deleted:
                await _gone(send)
                return
        await self.app(scope, receive, send)


def _session_id(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name.lower() == b"x-session-id":
            return bytes(value).decode("latin-1").strip()
    return None


async def _gone(send: Send) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(GONE))]
    await send({"type": "http.response.start", "status": 404, "headers": headers})
    await send({"type": "http.response.body", "body": GONE})

"""A capacity-limiting HTTP proxy in front of a real ORS server, for tests and benchmarks.

    python tests/capacity_proxy.py --upstream http://127.0.0.1:PORT --port N
        [--limit N] [--refuse P] [--seed S] [--retry-after S]

It forwards every request (SSE streams chunk by chunk) to the upstream server, and answers a
session creation (``POST /create``, the SDK's second step after ``/create_session``; see
``openreward/environments/server.py``) with ``HTTP 429`` and ``Retry-After`` instead when
``--limit`` sessions are open through it, or at random with probability ``--refuse`` (seeded,
so a run draws the same sequence). That is what a busy platform or a self-hoster's gateway
answers. A creation in flight holds its place, so concurrent creations never overshoot.

Open sessions are the ones it saw created (a 2xx ``/create``) and not yet deleted (``/delete``)
or reaped by the server: before it refuses on the limit, and when asked for its stats, it reads
the upstream's live session ids (``GET /{env}/_stats``, ``tests/serve_env.py``) and forgets the
ones the server no longer has. An upstream that does not answer gets ``502`` (a gateway's answer).

Test-only routes: ``GET /_proxy/stats`` (open now, most ever open, creations, refusals, deletes,
reaped, requests per ``METHOD /path``), ``POST /_proxy/reset`` (counters; the most ever open
restarts from the current count) and ``POST /_proxy/config`` (``{"limit", "refuse"}``).
:func:`start` runs it as its own process on 127.0.0.1; stop it by PID (:meth:`Proxy.stop`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Hop-by-hop headers (RFC 9110 7.6.1) and the ones aiohttp recomputes for the forwarded body.
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "host",
        "content-length",
    }
)


class Capacity:
    """What the proxy knows and decides about sessions; one per proxy process."""

    def __init__(self, limit: int | None, refuse: float, seed: int, retry_after: int) -> None:
        self.limit = limit
        self.refuse = refuse
        self.retry_after = retry_after
        self.rng = random.Random(seed)
        self.open: set[str] = set()
        self.creating = 0  # creations forwarded, not yet answered: they hold a place
        self.counts: Counter[str] = Counter()
        self.requests: Counter[str] = Counter()
        self.max_open = 0

    def unlucky(self) -> bool:
        """One seeded draw: is this creation refused at random?"""
        return self.refuse > 0 and self.rng.random() < self.refuse

    def full(self) -> bool:
        """Are ``limit`` sessions open or being created?"""
        return self.limit is not None and len(self.open) + self.creating >= self.limit

    def created(self, sid: str) -> None:
        self.open.add(sid)
        self.counts["created"] += 1
        self.max_open = max(self.max_open, len(self.open))

    def deleted(self, sid: str) -> None:
        if sid in self.open:
            self.open.discard(sid)
            self.counts["deleted"] += 1

    def forget_reaped(self, live: set[str]) -> None:
        gone = self.open - live
        self.open -= gone
        self.counts["reaped"] += len(gone)

    def stats(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "open": len(self.open),
            "creating": self.creating,
            "max_open": self.max_open,
            "limit": self.limit,
            "refuse": self.refuse,
            "created": self.counts["created"],
            "deleted": self.counts["deleted"],
            "reaped": self.counts["reaped"],
            "refused_limit": self.counts["refused_limit"],
            "refused_random": self.counts["refused_random"],
            "requests": dict(self.requests),
        }

    def reset(self) -> None:
        self.counts.clear()
        self.requests.clear()
        self.max_open = len(self.open)


def serve(upstream: str, port: int, capacity: Capacity) -> None:
    """Run the proxy until the process is stopped."""
    import aiohttp
    from aiohttp import web

    env_name = _first_env(upstream)
    state: dict[str, aiohttp.ClientSession] = {}

    async def on_startup(app: web.Application) -> None:
        # No pool limit: a benchmark opens well over aiohttp's default 100 connections.
        connector = aiohttp.TCPConnector(limit=0)
        state["client"] = aiohttp.ClientSession(
            upstream,
            connector=connector,
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=5),
        )

    async def on_cleanup(app: web.Application) -> None:
        await state["client"].close()

    async def refresh() -> None:
        """Forget sessions the upstream no longer has (reaped, or lost in a restart)."""
        try:
            async with state["client"].get(f"/{env_name}/_stats") as resp:
                data = await resp.json()
        except (aiohttp.ClientError, ValueError):
            return
        if isinstance(data, dict) and isinstance(data.get("sids"), list):
            capacity.forget_reaped({str(s) for s in data["sids"]})

    async def stats(request: web.Request) -> web.Response:
        await refresh()
        return web.json_response(capacity.stats())

    async def reset(request: web.Request) -> web.Response:
        await refresh()
        capacity.reset()
        return web.json_response({"ok": True})

    async def config(request: web.Request) -> web.Response:
        body = await request.json()
        if "limit" in body:
            capacity.limit = None if body["limit"] is None else int(body["limit"])
        if "refuse" in body:
            capacity.refuse = float(body["refuse"])
        return web.json_response(capacity.stats())

    def too_many(why: str) -> web.Response:
        capacity.counts[f"refused_{why}"] += 1
        detail = "too many sessions" if why == "limit" else "capacity exhausted, retry later"
        return web.json_response(
            {"detail": detail}, status=429, headers={"Retry-After": str(capacity.retry_after)}
        )

    async def forward(request: web.Request) -> web.StreamResponse:
        capacity.requests[f"{request.method} {request.path}"] += 1
        sid = request.headers.get("X-Session-ID", "")
        creating = request.method == "POST" and request.path == "/create"
        if creating:
            if capacity.unlucky():
                return too_many("random")
            if capacity.full():
                await refresh()  # a session the server reaped frees its place
                if capacity.full():
                    return too_many("limit")
            capacity.creating += 1
        try:
            return await _relay(request, state["client"], sid, creating)
        finally:
            if creating:
                capacity.creating -= 1

    async def _relay(
        request: web.Request, client: aiohttp.ClientSession, sid: str, creating: bool
    ) -> web.StreamResponse:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        body = await request.read()
        try:
            upstream_resp = await client.request(
                request.method,
                request.path_qs,
                headers=headers,
                data=body or None,
                allow_redirects=False,
            )
        except (aiohttp.ClientError, OSError) as exc:
            return web.json_response({"detail": f"upstream: {exc}"}, status=502)
        async with upstream_resp:
            out_headers = {k: v for k, v in upstream_resp.headers.items() if k.lower() not in _HOP}
            if upstream_resp.ok and creating and sid:
                capacity.created(sid)
            if upstream_resp.ok and request.path == "/delete" and sid:
                capacity.deleted(sid)
            if upstream_resp.content_type == "text/event-stream":
                response = web.StreamResponse(status=upstream_resp.status, headers=out_headers)
                await response.prepare(request)
                try:
                    async for chunk in upstream_resp.content.iter_any():
                        await response.write(chunk)
                except (aiohttp.ClientError, ConnectionResetError):
                    pass  # the upstream or the client went away mid-stream: end it
                await response.write_eof()
                return response
            data = await upstream_resp.read()
            return web.Response(status=upstream_resp.status, body=data, headers=out_headers)

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    app.router.add_get("/_proxy/stats", stats)
    app.router.add_post("/_proxy/reset", reset)
    app.router.add_post("/_proxy/config", config)
    app.router.add_route("*", "/{tail:.*}", forward)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def _first_env(upstream: str) -> str:
    with urllib.request.urlopen(f"{upstream}/list_environments", timeout=10) as resp:
        names = json.loads(resp.read())
    return str(names[0]).lower()


# -- starting and stopping it, for tests and benchmarks ------------------------------------


def _json(url: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body or {}).encode() if method == "POST" else None
    req = urllib.request.Request(
        f"{url}{path}", method=method, data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def stats(url: str) -> dict[str, Any]:
    """The stats of the proxy at ``url`` (from a process that did not start it)."""
    return dict(_json(url, "GET", "/_proxy/stats"))


def reset_counts(url: str) -> None:
    _json(url, "POST", "/_proxy/reset")


@dataclass
class Proxy:
    """A running proxy process; :meth:`stop` ends it by PID."""

    url: str
    upstream: str
    process: subprocess.Popen[bytes]
    log: Path

    def _json(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return _json(self.url, method, path, body)

    def stats(self) -> dict[str, Any]:
        """Open sessions now (``open``), most ever open (``max_open``), ``created``,
        ``deleted``, ``reaped``, ``refused_limit``, ``refused_random``, ``requests``."""
        return stats(self.url)

    def open_sessions(self) -> int:
        return int(self.stats()["open"])

    def refused(self) -> int:
        s = self.stats()
        return int(s["refused_limit"]) + int(s["refused_random"])

    def reset_counts(self) -> None:
        self._json("POST", "/_proxy/reset")

    def configure(self, *, limit: int | None = -1, refuse: float | None = None) -> None:
        """Change the limit (``None``: no limit) and the refusal probability while it runs."""
        body: dict[str, Any] = {}
        if limit != -1:
            body["limit"] = limit
        if refuse is not None:
            body["refuse"] = refuse
        self._json("POST", "/_proxy/config", body)

    def wait_open(self, expected: int, timeout: float = 10.0) -> int:
        """Sessions close in the background; poll until the open count settles."""
        from ors_server import settle

        return settle(self.open_sessions, expected, timeout)

    def stop(self) -> None:
        from ors_server import stop_process  # the one way this suite stops what it started

        stop_process(self.process)


def start(
    upstream: str,
    *,
    limit: int | None = None,
    refuse: float = 0.0,
    seed: int = 0,
    retry_after: int = 1,
    log_dir: Path | None = None,
    timeout: float = 30.0,
) -> Proxy:
    """Start a proxy for ``upstream`` on a free port of 127.0.0.1 and wait until it answers."""
    from ors_server import free_port

    for _ in range(4):  # another process may take the chosen port before we bind it
        port = free_port()
        args = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--upstream",
            upstream,
            "--port",
            str(port),
            "--refuse",
            str(refuse),
            "--seed",
            str(seed),
            "--retry-after",
            str(retry_after),
        ]
        if limit is not None:
            args += ["--limit", str(limit)]
        log = (log_dir or Path(os.environ.get("TMPDIR", "/tmp"))) / f"capacity-proxy-{port}.log"
        with log.open("wb") as fh:
            process = subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT)
        proxy = Proxy(f"http://127.0.0.1:{port}", upstream, process, log)
        deadline = time.monotonic() + timeout
        while process.poll() is None and time.monotonic() < deadline:
            try:
                if proxy.stats().get("pid") == process.pid:
                    return proxy
                break  # someone else's server on this port: ours cannot have bound it
            except (OSError, ValueError):
                time.sleep(0.1)
        proxy.stop()
        if "address already in use" not in log.read_text().lower():
            raise RuntimeError(f"capacity proxy did not start:\n{log.read_text()}")
    raise RuntimeError("capacity proxy could not bind a free port")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--limit", type=int, default=None, help="most sessions open at once")
    parser.add_argument("--refuse", type=float, default=0.0, help="probability of a refusal")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--retry-after", type=int, default=1, help="seconds, in Retry-After")
    opts = parser.parse_args()
    capacity = Capacity(opts.limit, opts.refuse, opts.seed, opts.retry_after)
    serve(opts.upstream.rstrip("/"), opts.port, capacity)


if __name__ == "__main__":
    main()

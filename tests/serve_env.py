"""Run real openreward Servers for tests, instrumented to count what reaches them.

Usage: python tests/serve_env.py FILE.py --port N [--envs A,B] [--reaper S] [--drop-routes P,Q]

It serves the Environment classes defined in FILE.py (all of them, or those named
in --envs, in that order) with the openreward server framework, plus two test-only
routes on every environment: ``GET /{env}/_stats`` (open sessions and their ids, a count of
requests per method and path, and how many new TCP connections each one opened) and ``POST /{env}/_stats/reset``.
"""

from __future__ import annotations

import argparse
import base64
import collections
import gc
import hashlib
import importlib.util
import inspect
import json
import os
import sys
from typing import Any

os.environ.setdefault("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")


def load_envs(path: str, names: list[str] | None) -> list[type]:
    from openreward.environments import Environment

    spec = importlib.util.spec_from_file_location("served_env_module", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["served_env_module"] = module
    spec.loader.exec_module(module)
    found = {
        obj.__name__: obj
        for _, obj in inspect.getmembers(module, inspect.isclass)
        if issubclass(obj, Environment)
        and obj is not Environment
        and obj.__module__ == module.__name__
    }
    if names:
        return [found[n] for n in names]
    return [found[n] for n in sorted(found)]


def main() -> None:
    import uvicorn
    from openreward.environments import Server

    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--envs", default="")
    parser.add_argument(
        "--reaper", type=float, default=None, help="stale-session threshold, seconds"
    )
    parser.add_argument(
        "--drop-routes",
        default="",
        help="comma-separated route paths to remove, e.g. /{env_name}/task_range (an older server)",
    )
    opts = parser.parse_args()
    server = Server(load_envs(opts.file, [n for n in opts.envs.split(",") if n]))
    app = server.app
    dropped = {p for p in opts.drop_routes.split(",") if p}
    if dropped:
        app.router.routes[:] = [
            r for r in app.router.routes if getattr(r, "path", None) not in dropped
        ]
    counts: collections.Counter[str] = collections.Counter()
    # X-Deployment values and the names (never the values) of X-Secrets entries seen.
    deployments: collections.Counter[str] = collections.Counter()
    secret_names: collections.Counter[str] = collections.Counter()
    # Names of env_overrides sent at /create_session, each with the sha256 of its value
    # (the value itself never reaches this log).
    env_overrides: dict[str, str] = {}
    # New TCP connections per route: requests from a client (address, port) never seen before.
    peers: set[str] = set()
    new_connections: collections.Counter[str] = collections.Counter()

    if opts.reaper is not None:
        # The reaper's threshold is a default argument of a closure inside Server.__init__.
        # lifespan_context is contextlib's wrapper around Server's lifespan(), whose
        # closure holds reaper_coro: search the closures a few levels deep.
        todo, seen = [app.router.lifespan_context], set()
        while todo:
            fn = todo.pop()
            if id(fn) in seen or not inspect.isfunction(fn):
                continue
            seen.add(id(fn))
            if fn.__name__ == "reaper_coro":
                fn.__defaults__ = (min(1.0, opts.reaper / 4), opts.reaper)
                continue
            todo += [cell.cell_contents for cell in fn.__closure__ or ()]

    @app.get("/{env_name}/_stats")
    async def stats(env_name: str) -> dict[str, Any]:
        return {
            "pid": os.getpid(),  # lets the starter tell its server from a port thief's
            "sessions": len(server._active_envs),
            # Live session ids: a proxy in front (tests/capacity_proxy.py) tells reaped ones.
            "sids": sorted(server._active_envs),
            "requests": dict(counts),
            "deployments": dict(deployments),
            "secret_names": dict(secret_names),
            "connections": dict(new_connections),
            "env_overrides": dict(env_overrides),
        }

    @app.post("/{env_name}/_stats/reset")
    async def reset_stats(env_name: str) -> dict[str, Any]:
        counts.clear()
        deployments.clear()
        secret_names.clear()
        new_connections.clear()
        return {"ok": True}

    class Count:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and "/_stats" not in scope["path"]:
                key = f"{scope['method']} {scope['path']}"
                counts[key] += 1
                peer = repr(scope.get("client"))
                if peer not in peers:
                    peers.add(peer)
                    new_connections[key] += 1
                headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
                if "x-deployment" in headers:
                    deployments[headers["x-deployment"]] += 1
                if headers.get("x-secrets"):
                    try:
                        names = json.loads(base64.b64decode(headers["x-secrets"]))
                        secret_names.update(str(n) for n in names)
                    except ValueError:
                        secret_names["<undecodable>"] += 1
                if scope["path"] == "/create_session":
                    receive = _watch_overrides(receive)
            await self.inner(scope, receive, send)

    def _watch_overrides(receive: Any) -> Any:
        async def wrapped() -> Any:
            message = await receive()
            try:
                body = json.loads(message.get("body") or b"{}")
            except ValueError:
                body = {}
            for key, value in (body.get("env") or {}).items():
                env_overrides[str(key)] = hashlib.sha256(str(value).encode()).hexdigest()
            return message

        return wrapped

    # Everything loaded so far lives as long as the server: keep it out of the cyclic
    # GC, whose full collections over it (about 0.14 s, measured) otherwise stall
    # whichever client happens to be talking to the server at the time.
    gc.freeze()
    uvicorn.run(Count(app), host="127.0.0.1", port=opts.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()

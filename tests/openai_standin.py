"""A scripted stand-in for an OpenAI-compatible chat-completions server: no model, it
answers at once (or ``--delay`` seconds late, as a model's latency: an asyncio server, any
number of requests wait at once). Run as its own process on 127.0.0.1 (``start(...)``),
stopped by PID.

    python tests/openai_standin.py --port P [--tool say --argument text --calls 1 --size 16]
        [--tools lookup,nosuch,submit] [--quote 3] [--delay 0.2]
        [--chat-status 400 --chat-message "Server is pinned to ..."]
        [--models-status 401 --models-message "Invalid API key"]

By default each ``POST /v1/chat/completions`` answers, from the messages it is sent: a call
of ``--tool`` with ``{--argument: <--size characters>}`` while the conversation holds fewer
than ``--calls`` tool results, then a plain answer of ``--size`` characters (with ``--tools``,
the i-th call is of the i-th name there, round and round, and ``--calls`` defaults to their
number). With ``--quote K`` the call's argument is instead the word the prompt quotes (the
first user message's ``'...'``), reversed on requests whose ``seed`` is a multiple of ``K``:
against ``orsgen eval --seed S`` on the echo environment every rollout's reward is then
fixed by its task, sample and turn, and differs between them. With ``--chat-status`` /
``--models-status`` that route answers that HTTP status with an OpenAI-style error body
(``{"error": {"message": ...}}``) instead. ``GET /v1/models`` lists one model, ``standin``;
``GET /health`` answers 200 once the server listens, with the number of chat-completions
requests it has answered (``{"chat_requests": N}``), and with ``?since=T`` (a Unix time) its
window over the requests that arrived since: ``"window": [first arrival, last answer]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

MODEL = "standin"


def argument(opts: argparse.Namespace, body: dict[str, Any], filler: str) -> str:
    """The tool call's argument for a request ``body`` (``--quote``: see the module's doc)."""
    if not opts.quote:
        return filler
    prompt = next(m for m in body["messages"] if m.get("role") == "user")["content"]
    text = prompt if isinstance(prompt, str) else " ".join(p.get("text", "") for p in prompt)
    word = text.split("'")[1]
    return word[::-1] if int(body.get("seed", 1)) % opts.quote == 0 else word


def _app(opts: argparse.Namespace) -> web.Application:
    filler = ("lorem ipsum " * (opts.size // 12 + 1))[: opts.size]
    answered = [0]  # chat-completions requests answered
    times: list[tuple[float, float]] = []  # each answered request's arrival and answer

    def error(status: int, message: str) -> web.Response:
        body = {"error": {"message": message, "type": "standin", "code": status}}
        return web.json_response(body, status=status)

    async def health(request: web.Request) -> web.Response:
        since = float(request.query.get("since", "inf"))
        seen = [t for t in times if t[0] >= since]
        window = [min(t[0] for t in seen), max(t[1] for t in seen)] if seen else None
        return web.json_response({"status": "ok", "chat_requests": answered[0], "window": window})

    async def models(request: web.Request) -> web.Response:
        if opts.models_status:
            return error(opts.models_status, opts.models_message)
        return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    async def chat(request: web.Request) -> web.Response:
        arrived = time.time()
        body = json.loads(await request.read() or b"{}")
        if opts.delay:
            await asyncio.sleep(opts.delay)
        if opts.chat_status:
            return error(opts.chat_status, opts.chat_message)
        results = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
        message: dict[str, Any] = {"role": "assistant", "content": filler}
        finish = "stop"
        names = opts.tools.split(",") if opts.tools else [opts.tool]
        calls = opts.calls if opts.calls is not None else len(names)
        if results < calls:
            message["content"] = ""
            message["tool_calls"] = [
                {
                    "id": f"call_{results}",
                    "type": "function",
                    "function": {
                        "name": names[results % len(names)],
                        "arguments": json.dumps({opts.argument: argument(opts, body, filler)}),
                    },
                }
            ]
            finish = "tool_calls"
        answered[0] += 1
        times.append((arrived, time.time()))
        return web.json_response(
            {
                "id": "chatcmpl-standin",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", MODEL),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )

    async def unknown(request: web.Request) -> web.Response:
        return error(404, f"no route {request.path}")

    app = web.Application()
    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_route("*", "/{tail:.*}", unknown)
    return app


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--tool", default="say")
    p.add_argument("--argument", default="text")
    p.add_argument("--tools", default="")
    p.add_argument("--calls", type=int, default=None)
    p.add_argument("--size", type=int, default=16)
    p.add_argument("--quote", type=int, default=0)
    p.add_argument("--chat-status", type=int, default=0)
    p.add_argument("--chat-message", default="")
    p.add_argument("--models-status", type=int, default=0)
    p.add_argument("--models-message", default="")
    p.add_argument("--delay", type=float, default=0.0)
    opts = p.parse_args(argv)
    web.run_app(_app(opts), host="127.0.0.1", port=opts.port, access_log=None, print=None)


@dataclass
class Standin:
    port: int
    process: subprocess.Popen[bytes]
    model: str = MODEL

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def chat_requests(self) -> int:
        """The chat-completions requests it has answered so far."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as r:
            return int(json.loads(r.read())["chat_requests"])

    def window(self, since: float) -> list[float] | None:
        """[first arrival, last answer] (Unix times) of the requests arrived since ``since``."""
        url = f"http://127.0.0.1:{self.port}/health?since={since!r}"
        with urllib.request.urlopen(url, timeout=5) as r:
            found = json.loads(r.read())["window"]
            return None if found is None else [float(x) for x in found]

    def stop(self) -> None:
        from serve_model import stop_process

        stop_process(self.process)


def start(log_dir: Path, **options: Any) -> Standin:
    """Start the stand-in with ``options`` (``calls=7``, ``chat_status=400``, ...) on a free
    port; returns once it answers ``/health``."""
    from serve_model import free_port

    port = free_port()
    args = [sys.executable, __file__, "--port", str(port)]
    for name, value in options.items():
        args += [f"--{name.replace('_', '-')}", str(value)]
    log = (log_dir / f"standin-{port}.log").open("wb")
    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    standin = Standin(port, process)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"stand-in exited: {Path(log.name).read_text()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return standin
        except OSError:
            time.sleep(0.05)
    standin.stop()
    raise RuntimeError("the stand-in did not start")


if __name__ == "__main__":
    main()

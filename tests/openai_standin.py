"""A scripted stand-in for an OpenAI-compatible chat-completions server: no model, it
answers at once (or ``--delay`` seconds late, as a model's latency: an asyncio server, any
number of requests wait at once). Run as its own process on 127.0.0.1 (``start(...)``),
stopped by PID.

    python tests/openai_standin.py --port P [--tool say --argument text --calls 1 --size 16]
        [--tools lookup,nosuch,submit] [--quote 3] [--delay 0.2]
        [--chat-status 400 --chat-message "Server is pinned to ..."]
        [--models-status 401 --models-message "Invalid API key"] [--poison WORD]
        [--script '{"fig": ["nonjson", "right"], "lemon": ["cut"]}'] [--no-usage fig,lemon]

By default each ``POST /v1/chat/completions`` answers, from the messages it is sent: a call
of ``--tool`` with ``{--argument: <--size characters>}`` while the conversation holds fewer
than ``--calls`` tool results, then a plain answer of ``--size`` characters (with ``--tools``,
the i-th call is of the i-th name there, round and round, and ``--calls`` defaults to their
number). With ``--quote K`` the call's argument is instead the word the prompt quotes (the
first user message's ``'...'``), reversed on requests whose ``seed`` is a multiple of ``K``:
against ``orsgen eval --seed S`` on the echo environment every rollout's reward is then
fixed by its task, sample and turn, and differs between them. With ``--chat-status`` /
``--models-status`` that route answers that HTTP status with an OpenAI-style error body
(``{"error": {"message": ...}}``) instead. With ``--poison WORD`` a chat request whose
messages hold WORD is answered 504, as a gateway answers a request it timed out on.
``GET /v1/models`` lists one model, ``standin``;
``GET /health`` answers 200 once the server listens, with the number of chat-completions
requests it has answered (``{"chat_requests": N}``), and per API key (the bearer token a
client sends: a test's label, never a real key) the requests that have arrived
(``received``, counted before any delay) and those waiting now (``waiting``). ``POST
/_hold/KEY`` makes that key's requests wait, from then on, until ``POST /_release/KEY``: a
test holds a run's requests in flight for as long as it needs. With ``?since=T`` (a Unix
time) ``/health`` also gives its window over the requests that arrived since: ``"window":
[first arrival, last answer]``.

With ``--script`` the answer to turn ``t`` (the assistant messages the request holds) of a
rollout whose prompt quotes ``WORD`` is ``script[WORD][t]`` (the last one past its end; a word
the script lacks: ``plain``): a call of ``--tool`` with ``{--argument: WORD}`` (``right``) or
the word reversed (``wrong``), arguments that are not JSON (``nonjson``) or do not fit the tool
(``misfit``, ``{"nosuch": WORD}``; ``mistyped``, ``{--argument: 7}``), a call of a tool that does not exist (``unknown``), a plain
answer (``plain``), one cut by the length limit (``cut``: ``finish_reason`` "length"), or HTTP
400 (``fail``). Every answer reports ``usage``: ``prompt_tokens`` 10 per message of the request,
``completion_tokens`` 5 + ``t``; none for a prompt quoting a word of ``--no-usage``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

MODEL = "standin"


def quoted(body: dict[str, Any]) -> str:
    """The word the request's prompt (its first user message) quotes, or ``""``."""
    prompt = next(m for m in body["messages"] if m.get("role") == "user")["content"]
    text = prompt if isinstance(prompt, str) else " ".join(p.get("text", "") for p in prompt)
    return (text.split("'") + ["", ""])[1]


def argument(opts: argparse.Namespace, body: dict[str, Any], filler: str) -> str:
    """The tool call's argument for a request ``body`` (``--quote``: see the module's doc)."""
    if not opts.quote:
        return filler
    word = quoted(body)
    return word[::-1] if int(body.get("seed", 1)) % opts.quote == 0 else word


def scripted(opts: argparse.Namespace, word: str, turn: int) -> tuple[str, str] | str | None:
    """``--script``'s answer at ``turn``: a call's (tool, arguments text), ``"plain"``,
    ``"cut"`` or ``"fail"``; ``None`` without a script."""
    if not opts.script:
        return None
    steps = json.loads(opts.script).get(word, ["plain"])
    step = steps[min(turn, len(steps) - 1)]
    calls = {
        "right": (opts.tool, json.dumps({opts.argument: word})),
        "wrong": (opts.tool, json.dumps({opts.argument: word[::-1]})),
        "nonjson": (opts.tool, "{" + word),
        "misfit": (opts.tool, json.dumps({"nosuch": word})),
        "mistyped": (opts.tool, json.dumps({opts.argument: 7})),
        "unknown": ("nosuch", json.dumps({opts.argument: word})),
    }
    return calls.get(step, step)


def _app(opts: argparse.Namespace) -> web.Application:
    filler = ("lorem ipsum " * (opts.size // 12 + 1))[: opts.size]
    answered = [0]  # chat-completions requests answered
    times: list[tuple[float, float]] = []  # each answered request's arrival and answer
    received: Counter[str] = Counter()  # per key: requests arrived
    waiting: Counter[str] = Counter()  # per key: requests held now
    held: dict[str, asyncio.Event] = {}  # per key held: set when released

    def error(status: int, message: str) -> web.Response:
        body = {"error": {"message": message, "type": "standin", "code": status}}
        return web.json_response(body, status=status)

    async def health(request: web.Request) -> web.Response:
        counts = {"received": received, "waiting": waiting}
        since = float(request.query.get("since", "inf"))
        seen = [t for t in times if t[0] >= since]
        window = [min(t[0] for t in seen), max(t[1] for t in seen)] if seen else None
        counts |= {"window": window}
        return web.json_response({"status": "ok", "chat_requests": answered[0], **counts})

    async def hold(request: web.Request) -> web.Response:
        held.setdefault(request.match_info["key"], asyncio.Event())
        return web.json_response({})

    async def release(request: web.Request) -> web.Response:
        held.pop(request.match_info["key"], asyncio.Event()).set()
        return web.json_response({})

    async def models(request: web.Request) -> web.Response:
        if opts.models_status:
            return error(opts.models_status, opts.models_message)
        return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    async def chat(request: web.Request) -> web.Response:
        arrived = time.time()
        key = request.headers.get("Authorization", "").removeprefix("Bearer ")
        received[key] += 1
        if key in held:
            waiting[key] += 1
            try:
                await held[key].wait()
            finally:
                waiting[key] -= 1
        body = json.loads(await request.read() or b"{}")
        if opts.delay:
            await asyncio.sleep(opts.delay)
        if opts.chat_status:
            return error(opts.chat_status, opts.chat_message)
        if opts.poison and opts.poison in json.dumps(body.get("messages", [])):
            return error(504, "the upstream timed out")
        said = body.get("messages", [])
        results = sum(1 for m in said if m.get("role") == "tool")
        turn = sum(1 for m in said if m.get("role") == "assistant")
        word = quoted(body) if opts.script or opts.no_usage else ""
        step = scripted(opts, word, turn)
        if step == "fail":
            return error(400, f"scripted failure at turn {turn}")
        message: dict[str, Any] = {"role": "assistant", "content": filler}
        finish = "length" if step == "cut" else "stop"
        names = opts.tools.split(",") if opts.tools else [opts.tool]
        calls = opts.calls if opts.calls is not None else len(names)
        call = (names[results % len(names)], None) if step is None and results < calls else step
        if isinstance(call, tuple):
            text = call[1] or json.dumps({opts.argument: argument(opts, body, filler)})
            message["content"] = ""
            message["tool_calls"] = [
                {
                    "id": f"call_{results}",
                    "type": "function",
                    "function": {"name": call[0], "arguments": text},
                }
            ]
            finish = "tool_calls"
        answered[0] += 1
        answer: dict[str, Any] = {
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", MODEL),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if not (opts.no_usage and word in opts.no_usage.split(",")):
            used = {"prompt_tokens": 10 * len(said), "completion_tokens": 5 + turn}
            answer["usage"] = {**used, "total_tokens": sum(used.values())}
        times.append((arrived, time.time()))
        return web.json_response(answer)

    async def unknown(request: web.Request) -> web.Response:
        return error(404, f"no route {request.path}")

    app = web.Application()
    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/_hold/{key}", hold)
    app.router.add_post("/_release/{key}", release)
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
    p.add_argument("--poison", default="")
    p.add_argument("--script", default="")
    p.add_argument("--no-usage", default="")
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

    def _health(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as r:
            return dict(json.loads(r.read()))

    def chat_requests(self) -> int:
        """The chat-completions requests it has answered so far."""
        return int(self._health()["chat_requests"])

    def received(self, key: str) -> int:
        """The chat-completions requests with API key ``key`` that have arrived so far."""
        return int(self._health()["received"].get(key, 0))

    def waiting(self, key: str) -> int:
        """The requests with API key ``key`` held now (:meth:`hold`)."""
        return int(self._health()["waiting"].get(key, 0))

    def hold(self, key: str) -> None:
        """Hold every request with API key ``key`` from now on, until :meth:`release`."""
        self._post(f"/_hold/{key}")

    def release(self, key: str) -> None:
        self._post(f"/_release/{key}")

    def _post(self, path: str) -> None:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method="POST")
        with urllib.request.urlopen(request, timeout=5):
            pass

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

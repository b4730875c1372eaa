"""A stand-in for an OpenAI-compatible chat endpoint that answers every request at once
with one plain assistant message (no tool call), for environments that grade the final
message through a terminal tool (bench/coin_env.py decides by its own coin). No model.

    with AnswerModel("yes") as model:
        evaluate(CoinEnv, EvalConfig(endpoint=model.endpoint, model="answer"), ...)

It serves ``POST /v1/chat/completions`` and ``GET /v1/models`` on 127.0.0.1 (a free port)
from a daemon thread of the calling process, and counts the completions it answered.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


class AnswerModel:
    """The endpoint; ``endpoint`` is its ``.../v1`` base URL once started."""

    def __init__(self, answer: str = "yes") -> None:
        self.answer = answer
        self.requests = 0
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

            def _send(self, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self._send({"object": "list", "data": [{"id": "answer", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                request = json.loads(self.rfile.read(length) or b"{}")
                with owner._lock:
                    owner.requests += 1
                self._send(
                    {
                        "id": "answer",
                        "object": "chat.completion",
                        "created": 0,
                        "model": request.get("model", "answer"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": owner.answer},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }
                )

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> AnswerModel:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

"""A stand-in for vLLM's OpenAI-compatible ``POST /v1/completions``, for the echo environment.

It is the only stand-in in the AsyncGRPO rollout test: no model, no GPU. Given a prompt
of token ids it decodes them with the rollout's own tokenizer, finds the echo task's
target word in the environment's prompt ("Call echo with the word 'apple'.") and
answers, deterministically:

- first turn (no tool response yet): ``<tool_call>{"name": "echo", ...}</tool_call><|im_end|>``;
- after a tool response: a short final answer, ``Done.<|im_end|>``.

The reply carries what TRL's ``_AsyncRolloutLoop._generate_one_turn`` reads:
``choices[0].token_ids`` and ``choices[0].logprobs.token_logprobs`` (zeros). The server
runs on 127.0.0.1 in a daemon thread of the calling process and counts its requests.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web

TARGET = re.compile(r"Call echo with the word '([^']+)'")
FINAL_ANSWER = "Done."
IM_END = "<|im_end|>"


def echo_prompt(word: str) -> str:
    """The environment prompt this stand-in reads a target word from (``TARGET``)."""
    return f"Call echo with the word {word!r}."


def echo_tokenizer(tools: Sequence[Callable[..., Any]], words: Sequence[str]) -> Any:
    """examples/tiny_model.py's tokenizer, trained on the echo conversation of each word:
    the prompt above, the ``echo`` call and the environment's ``echo: <word>`` reply."""
    import tiny_model

    episodes = [tiny_model.Episode(echo_prompt(w), {"text": w}, f"echo: {w}") for w in words]
    return tiny_model.build_episode_tokenizer(tools, episodes, "echo")


def reply_text(prompt_text: str) -> str:
    """What the stand-in 'model' says next, given the decoded prompt."""
    found = TARGET.findall(prompt_text)
    if not found:
        return f"I see no task.{IM_END}"
    # Qwen3's template renders tool responses inside a user turn: look only at the
    # conversation after the last user turn opened.
    last_user = prompt_text.rsplit("<|im_start|>user", 1)[-1]
    if "<tool_response>" in last_user:
        return f"{FINAL_ANSWER}{IM_END}"
    call = json.dumps({"name": "echo", "arguments": {"text": found[-1]}})
    return f"<tool_call>\n{call}\n</tool_call>{IM_END}"


class StandinVLLM:
    """``with StandinVLLM(tokenizer) as server: server.url`` - stops on exit."""

    def __init__(self, tokenizer: Any, model_name: str = "standin") -> None:
        self.tokenizer = tokenizer
        self.model_name = model_name
        self.counts: Counter[str] = Counter()
        self.prompts_seen: list[str] = []
        self.url = ""
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    # -- handlers ----------------------------------------------------------------------

    async def _completions(self, request: web.Request) -> web.Response:
        body = await request.json()
        prompt = body["prompt"]
        if not isinstance(prompt, list) or not all(isinstance(t, int) for t in prompt):
            return web.json_response({"error": "prompt must be a list of token ids"}, status=400)
        text = self.tokenizer.decode(prompt, skip_special_tokens=False)
        out = reply_text(text)
        ids = list(self.tokenizer.encode(out, add_special_tokens=False))
        with self._lock:
            self.counts["POST /v1/completions"] += 1
            self.prompts_seen.append(text)
        return web.json_response(
            {
                "id": f"cmpl-{self.counts['POST /v1/completions']}",
                "object": "text_completion",
                "model": body.get("model", self.model_name),
                "choices": [
                    {
                        "index": 0,
                        "text": out,
                        "token_ids": ids,
                        "logprobs": {"token_logprobs": [0.0] * len(ids)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(ids)},
            }
        )

    async def _models(self, request: web.Request) -> web.Response:
        with self._lock:
            self.counts["GET /v1/models"] += 1
        return web.json_response(
            {"object": "list", "data": [{"id": self.model_name, "object": "model"}]}
        )

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    # -- lifecycle ---------------------------------------------------------------------

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        app = web.Application()
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/health", self._health)
        try:
            self._runner = web.AppRunner(app, access_log=None)
            loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0)  # the OS picks a free port
            loop.run_until_complete(site.start())
            port = int(self._runner.addresses[0][1])
            self.url = f"http://127.0.0.1:{port}"
        except BaseException as exc:  # noqa: BLE001 - reported to start()
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

    def start(self) -> "StandinVLLM":
        self._thread = threading.Thread(target=self._serve, name="standin-vllm", daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("stand-in vLLM server did not start")
        if self._error is not None:
            raise RuntimeError(f"stand-in vLLM server failed: {self._error}") from self._error
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def __enter__(self) -> "StandinVLLM":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

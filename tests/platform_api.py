"""A stand-in of OpenReward's platform API on loopback, derived from the ``openreward``
SDK's source (0.1.167), for the upload and the difficulty prior. A real HTTP server in a
subprocess: stop it mid-run with :meth:`PlatformAPI.stop` (SIGKILL, as a crash would).

What the SDK sends and expects (``api/rollouts/rollout.py``, ``background.py``,
``api/environments/client.py``):

- ``GET /v1/environments/{owner}/{name}`` -> ``{"id": ...}`` before a rollout starts
  (``_fetch_environment_id``), and ``/variants`` when a variant is given;
- ``POST /v1/rollouts`` ``{"events": [...]}`` with header ``x-api-key``: the rollout's
  start event (``eventType: "rollout"``, ``eventId``, ``runName``, ``environment``,
  ``split``, ``metadata``, ``task_spec``, ``run_info``) posted alone and synchronously by
  ``create()``, then batches of message events (``eventType: "message"``,
  ``rolloutEventId``, ``index``, ``type``, ``content``, ``name``, ``callId``, ``reward``,
  ``isFinished``, ``metadata``) and ``rollout_update`` events from a background thread;
- ``GET /v1/environments/{owner}/{name}/task-difficulty`` with query ``split``,
  ``model_name``, ``training_stage`` (and ``variant``...) -> ``{"tasks": [{task_index,
  avg_reward, min_reward, max_reward, num_rollouts, response_chars, split, variant}]}``.

It takes only what the SDK sends: a post to ``/v1/rollouts`` without the key header is
answered 401, and one that holds a rollout start beside any other event (several starts,
or a start and messages: the SDK posts each start alone) 422.

Every request is appended to a JSON-lines record file (so it survives a stop), with the
client's port (``peer``: one per connection). ``POST /_control {"refuse": 503 | 429 |
null}`` makes the API answer every other request with that status until told otherwise;
``{"hang": true}`` makes it record every other request and never answer it (an API that
accepts connections and does not answer). ``--delay SECONDS`` (``PlatformAPI(delay=)``)
makes it answer each request that much later, as a distant API would. It speaks HTTP/1.1
and keeps connections alive, as the platform's API does.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHARS = {k: 10.0 for k in ("mean", "p1", "p10", "p25", "p50", "p75", "p90", "p99")}


def dropped_at_exit(said: str) -> int:
    """The rollouts an uploading process's exit said it did not upload (its one line)."""
    return sum(int(k) for k in re.findall(r"at exit (\d+) more rollouts were not uploaded", said))


def difficulty_row(
    task: int, avg: float, low: float, high: float, n: int, **extra: Any
) -> dict[str, Any]:
    """One task-difficulty row as the platform sends it (``extra``: ``split``,
    ``variant``, and the stand-in's own ``model_name`` / ``training_stage`` filters)."""
    row = {
        "task_index": task,
        "avg_reward": avg,
        "min_reward": low,
        "max_reward": high,
        "num_rollouts": n,
        "response_chars": dict(CHARS),
        "split": None,
        "variant": None,
    }
    row.update(extra)
    return row


class _Handler(BaseHTTPRequestHandler):
    server: Any
    protocol_version = "HTTP/1.1"  # kept-alive connections, as a real API's
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms ACK wait

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _body(self) -> str:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length).decode("utf-8", "replace") if length else ""

    def _record(self, body: str) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        entry = {
            "t": time.time(),
            "method": self.command,
            "path": self.path,
            "body": body,
            "headers": headers,
            "peer": self.client_address[1],
        }
        with self.server.lock:
            with open(self.server.record, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")

    def _send(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _serve(self) -> None:
        body = self._body() if self.command == "POST" else ""
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/_control":
            asked = json.loads(body or "{}")
            self.server.refuse = asked.get("refuse")
            self.server.hang = bool(asked.get("hang"))
            return self._send(200, asked)
        self._record(body)
        if self.server.hang:
            threading.Event().wait()  # never answers (a daemon thread: ends with the server)
        time.sleep(self.server.delay)
        if self.server.refuse:
            return self._send(int(self.server.refuse), {"detail": "refused by the stand-in"})
        parts = url.path.strip("/").split("/")
        if url.path == "/v1/rollouts" and self.command == "POST":
            if not self.headers.get("x-api-key"):
                return self._send(401, {"detail": "no API key"})
            events = json.loads(body)["events"]
            if len(events) > 1 and any(e.get("eventType") == "rollout" for e in events):
                return self._send(422, {"detail": "a rollout's start is posted alone"})
            return self._send(200, {"ok": True})
        if len(parts) == 4 and parts[:2] == ["v1", "environments"]:
            return self._send(200, {"id": f"env-{parts[2]}-{parts[3]}", "name": parts[3]})
        if len(parts) == 5 and parts[4] == "variants":
            return self._send(200, [])
        if len(parts) == 5 and parts[4] == "task-difficulty":
            query = dict(urllib.parse.parse_qsl(url.query))
            rows = []
            for row in self.server.difficulty:
                if any(
                    k in row and row[k] != query.get(k) for k in ("model_name", "training_stage")
                ):
                    continue
                if "split" in query and row.get("split") not in (query["split"], None):
                    continue
                rows.append(
                    {k: v for k, v in row.items() if k not in ("model_name", "training_stage")}
                )
            return self._send(200, {"tasks": rows})
        return self._send(404, {"detail": f"no route {url.path}"})

    do_GET = do_POST = _serve


def serve(port: int, record: str, difficulty: str | None, delay: float) -> None:
    server: Any = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    server.daemon_threads = True
    server.lock = threading.Lock()
    server.record = record
    server.refuse = None
    server.hang = False
    server.delay = delay
    server.difficulty = json.loads(Path(difficulty).read_text()) if difficulty else []
    print(server.server_address[1], flush=True)
    server.serve_forever()


class PlatformAPI:
    """The stand-in in a subprocess: ``url``, what it recorded, refusing and stopping."""

    def __init__(
        self, directory: Path, difficulty: list[dict[str, Any]] | None = None, delay: float = 0.0
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.record = directory / "platform_requests.jsonl"
        self.record.touch()
        args = [sys.executable, __file__, "--record", str(self.record), "--delay", str(delay)]
        if difficulty is not None:
            (directory / "difficulty.json").write_text(json.dumps(difficulty))
            args += ["--difficulty", str(directory / "difficulty.json")]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())
        self.url = f"http://127.0.0.1:{self.port}"

    def run_child(
        self, argv: list[str], key: str, timeout: float, **extra_env: str
    ) -> tuple[dict[str, Any], subprocess.CompletedProcess[str], float]:
        """Run a child that uploads to this stand-in (its only OPENREWARD_* settings are
        this API's URL and ``key``) and prints one ``{"dropped": ...}`` JSON line: that
        line, the finished process and its wall time."""
        env = self.child_env(key, **extra_env)
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=timeout,
        )
        wall = time.monotonic() - started
        assert proc.returncode == 0, proc.stderr[-4000:]
        (line,) = [x for x in proc.stdout.splitlines() if x.startswith('{"dropped"')]
        return json.loads(line), proc, wall

    def child_env(self, key: str, **extra_env: str) -> dict[str, str]:
        """The environment of a process that uploads to this stand-in: this one's, with no
        OPENREWARD_* setting but this API's URL and ``key``."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
        env.update(
            OPENREWARD_API_URL=self.url,
            OPENREWARD_API_KEY=key,
            OPENREWARD_DISABLE_UPDATE_CHECK="1",
            PYTHONPATH=str(ROOT),
            **extra_env,
        )
        return env

    def refuse(self, status: int | None) -> None:
        self._control({"refuse": status})

    def hang(self) -> None:
        """From now on, record every request and never answer it."""
        self._control({"hang": True})

    def _control(self, asked: dict[str, Any]) -> None:
        request = urllib.request.Request(
            self.url + "/_control", data=json.dumps(asked).encode(), method="POST"
        )
        urllib.request.urlopen(request, timeout=10).read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def requests(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.record.read_text().splitlines() if line.strip()]

    def events(self) -> list[dict[str, Any]]:
        """Every event posted to /v1/rollouts, in arrival order."""
        out: list[dict[str, Any]] = []
        for r in self.requests():
            if r["path"] == "/v1/rollouts" and r["body"]:
                out.extend(json.loads(r["body"])["events"])
        return out

    def rollouts(self) -> dict[str, dict[str, Any]]:
        """Each started rollout (its start event) with its message events by ``index``."""
        found: dict[str, dict[str, Any]] = {}
        events = self.events()
        for e in events:
            if e.get("eventType") == "rollout":
                found[e["eventId"]] = {**e, "messages": [], "updates": []}
        for e in events:
            if e.get("eventType") == "message" and e.get("rolloutEventId") in found:
                found[e["rolloutEventId"]]["messages"].append(e)
            elif e.get("eventType") == "rollout_update" and e.get("eventId") in found:
                found[e["eventId"]]["updates"].append(e)
        for r in found.values():
            r["messages"].sort(key=lambda m: m["index"])
        return found


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--record", required=True)
    parser.add_argument("--difficulty")
    parser.add_argument("--delay", type=float, default=0.0)
    a = parser.parse_args()
    serve(a.port, a.record, a.difficulty, a.delay)

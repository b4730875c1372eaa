"""The model endpoints of an evaluation (``--endpoint``, repeatable): one ``openai.OpenAI``
client per endpoint, and one :class:`Router` that sends each request to the endpoint with
the fewest requests in flight (ties in turn). The rules, as docs/evaluating.md states them:

- an endpoint that is not there (connection refused or dropped, HTTP 502/503/504) or busy
  (408/409/429) rests, ``FIRST_REST`` seconds doubling to ``MAX_REST`` while the request
  after its rest fails too; once its rest is over it takes one request at a time. An
  outage is logged when it starts and ends, and is never the model's failure; once every
  endpoint has been down for the down limit, every request raises :class:`EndpointsDown`;
- a server error (other 5xx) or a timeout is the request's own: the endpoint is up, and
  the request is sent again at once, to another endpoint when one can take it, failing its
  rollout after ``SERVER_ERRORS`` (resting would make a server that fails many of a
  model's requests look down, and stop the run);
- each client has ``max_retries=1``: one quick retry absorbs a kept-alive connection the
  server closed; more would hold requests on a dead endpoint before the router may move them.

Keys stay in the clients: labels, log lines, errors and counts carry public URLs only.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
import types
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from orsgen.eval.config import EvalConfigError
from orsgen.jsonobject import is_object

FIRST_REST = 1.0
MAX_REST = 30.0
DEFAULT_DOWN_LIMIT = 300.0
SERVER_ERRORS = 2
CLIENT_RETRIES = 1
# Busy, or not there (a gateway's answers): the endpoint rests. The openai client retries
# these and 5xx itself (once, here).
_AWAY_STATUSES = frozenset({408, 409, 429, 502, 503, 504})

log = logging.getLogger("orsgen.eval")
Clock = Callable[[], float]


class EndpointsDown(RuntimeError):
    """Every endpoint has been down for the down limit: the run stops, its rows kept. The
    message names each endpoint and its last failure."""


class RequestFailed(Exception):
    """A request's own failure (such as HTTP 400, or ``SERVER_ERRORS`` server errors): its
    rollout is ``failed``, for this reason (naming the endpoint)."""


def public_url(url: str) -> str:
    """``url`` without credentials or a query (never written as given)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def keyed(urls: Sequence[str], keys: str | Sequence[str] | None) -> list[tuple[str, str]]:
    """Each endpoint with its key: ``keys`` is one key for every endpoint, or one per
    endpoint in the same order (``None``: no key, sent as ``EMPTY``)."""
    given = [keys] if keys is None or isinstance(keys, str) else list(keys)
    if len(given) == 1:
        given *= len(urls)
    if len(given) != len(urls):
        raise EvalConfigError(
            f"gives {len(given)} keys for {len(urls)} endpoints: give one key for every "
            "endpoint, or one per endpoint in the same order",
            "endpoint_api_key",
        )
    return [(url, key or "EMPTY") for url, key in zip(urls, given, strict=True)]


def check(keyed_urls: Sequence[tuple[str, str]]) -> None:
    """Before a run (``orsgen eval``): raise :class:`EvalConfigError` when no endpoint answers
    or one refuses its key (one that lacks ``/models`` is fine)."""
    import openai

    silent: list[str] = []
    for url, key in keyed_urls:
        try:
            with openai.OpenAI(base_url=url, api_key=key, timeout=30.0, max_retries=1) as client:
                client.models.list()
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            said = server_message(exc)
            raise EvalConfigError(
                f"endpoint {public_url(url)} refused the key (HTTP {exc.status_code}"
                f"{': ' + said if said else ''}); give the right one with "
                "--endpoint-api-key (or OPENAI_API_KEY)"
            ) from None
        except openai.APIStatusError:
            continue
        except openai.APIError as exc:
            silent.append(f"endpoint {public_url(url)} does not answer: {exc}")
    if len(silent) == len(keyed_urls):
        raise EvalConfigError("; ".join(silent))


@dataclass(eq=False)
class Endpoint:
    """One endpoint: its client, the requests in flight, its outage, and its counts."""

    label: str  # the public URL
    client: Any  # an openai.OpenAI
    requests: int = 0
    failures: int = 0  # requests the endpoint failed (see the module's docstring)
    outages: int = 0
    in_flight: int = 0
    down_since: float | None = None
    rest: float = 0.0
    rest_until: float = 0.0
    failed_in_outage: int = 0
    last_error: str = ""


class Router:
    """Which endpoint takes the next request, and each endpoint's outages, under one lock."""

    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        down_limit: float = DEFAULT_DOWN_LIMIT,
        clock: Clock = time.monotonic,
        rests: tuple[float, float] = (FIRST_REST, MAX_REST),
    ) -> None:
        self.endpoints = list(endpoints)
        self.down_limit, self._clock = down_limit, clock
        self._first_rest, self._max_rest = rests
        self._ready = threading.Condition()
        self._turn = 0
        self._stopped: str | None = None  # why every request now raises EndpointsDown

    def take(self, avoid: Endpoint | None = None) -> tuple[Endpoint, bool]:
        """The endpoint of the next request (not ``avoid`` when another can take it), and
        whether it is down (this is its one request after its rest). Waits while every
        endpoint rests; raises :class:`EndpointsDown` once all are down for the limit."""
        down_for = self.down_limit
        with self._ready:
            while True:
                now, down = self._clock(), [e.down_since for e in self.endpoints]
                # Since when every endpoint is down (when the last one went down), or None.
                since = None if None in down else max(s for s in down if s is not None)
                if self._stopped is None and since is not None and now - since >= down_for:
                    said = ", ".join(f"{e.label} ({e.last_error})" for e in self.endpoints)
                    self._stopped = f"every endpoint has been down for {down_for:g} s: {said}"
                    self._ready.notify_all()
                if self._stopped is not None:
                    raise EndpointsDown(self._stopped)
                chosen = self._choose(now, avoid)
                if chosen is not None:
                    chosen.in_flight += 1
                    chosen.requests += 1
                    return chosen, chosen.down_since is not None
                # Every endpoint is down (one that is up always takes a request): until a
                # rest ends, the limit passes, or an answer or a failure changes that.
                ends = [e.rest_until for e in self.endpoints if e.rest_until > now]
                limit = (now if since is None else since) + down_for
                self._ready.wait(min([limit, *ends]) - now)

    def _choose(self, now: float, avoid: Endpoint | None) -> Endpoint | None:
        count = len(self.endpoints)
        open_ = [
            (e is avoid, e.in_flight, (i - self._turn) % count, i)
            for i, e in enumerate(self.endpoints)
            if e.down_since is None or (now >= e.rest_until and e.in_flight == 0)
        ]
        if not open_:
            return None
        index = min(open_)[3]
        self._turn = (index + 1) % count
        return self.endpoints[index]

    def answered(self, endpoint: Endpoint, failed: bool = False) -> None:
        """``endpoint`` answered a request (``failed``: with a server error): it is up."""
        with self._ready:
            endpoint.in_flight -= 1
            endpoint.failures += failed
            if endpoint.down_since is not None:
                gone = (self._clock() - endpoint.down_since, endpoint.failed_in_outage)
                said = "endpoint %s is back after %.1f s (%d failed requests)"
                log.warning(said, endpoint.label, *gone)
                endpoint.down_since = None
                self._ready.notify_all()

    def timed_out(self, endpoint: Endpoint) -> None:
        """A request to ``endpoint`` got no answer in time: a failure, and no news of it."""
        with self._ready:
            endpoint.in_flight -= 1
            endpoint.failures += 1
            self._ready.notify_all()  # a resting endpoint may take its next try

    def failed(self, endpoint: Endpoint, resting: bool, error: str) -> None:
        """``endpoint`` is not there (for its request after a rest: ``resting``): it rests."""
        with self._ready:
            now = self._clock()
            endpoint.in_flight -= 1
            endpoint.failures += 1
            endpoint.last_error = error
            if endpoint.down_since is None:
                endpoint.down_since, endpoint.rest = now, self._first_rest
                endpoint.outages += 1
                endpoint.failed_in_outage = 0
                endpoint.rest_until = now + endpoint.rest
                up = sum(e.down_since is None for e in self.endpoints)
                where = (
                    "its requests go to the other endpoints"
                    if up
                    else f"requests wait (the run stops once every endpoint has been down "
                    f"for {self.down_limit:g} s)"
                )
                log.warning("endpoint %s is down (%s): %s", endpoint.label, error, where)
            elif resting:
                endpoint.rest = min(endpoint.rest * 2, self._max_rest)
                endpoint.rest_until = now + endpoint.rest
            endpoint.failed_in_outage += 1
            self._ready.notify_all()

    def counts(self, earlier: Mapping[str, Any] | None = None) -> dict[str, dict[str, int]]:
        """Each endpoint's counts by its public URL, added to a resumed run's ``earlier``."""
        names = ("requests", "failures", "outages")
        ours = {e.label: {name: getattr(e, name) for name in names} for e in self.endpoints}
        return added_counts(earlier or {}, ours)


def added_counts(*counts: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Endpoint counts (run.json's ``endpoint_counts``, by URL) added up."""
    out: dict[str, dict[str, int]] = {}
    for each in counts:
        for url, figures in each.items():
            given: Mapping[str, Any] = figures if is_object(figures) else {}
            total = out.setdefault(url, {"requests": 0, "failures": 0, "outages": 0})
            for name in total:
                total[name] += int(given.get(name, 0))
    return out


class Endpoints:
    """The run's endpoints (``urls`` with their ``keys``, see :func:`keyed`), one client each."""

    def __init__(
        self,
        urls: Sequence[str],
        keys: str | Sequence[str] | None,
        request_timeout: float,
        down_limit: float = DEFAULT_DOWN_LIMIT,
        rests: tuple[float, float] = (FIRST_REST, MAX_REST),
    ) -> None:
        import openai

        client = functools.partial(
            openai.OpenAI, timeout=request_timeout, max_retries=CLIENT_RETRIES
        )
        made = [
            Endpoint(public_url(u), client(base_url=u, api_key=k)) for u, k in keyed(urls, keys)
        ]
        self.router = Router(made, down_limit, rests=rests)

    def post(self, body: dict[str, Any]) -> Any:
        """One ``POST /chat/completions`` (the body goes as JSON as it is), on whichever
        endpoint the router picks, and again on another while endpoints fail it; raises
        :class:`RequestFailed` or :class:`EndpointsDown`. The answer reads as a
        ``ChatCompletion`` does (:class:`Fields`)."""
        server_errors, failed_it = 0, None
        while True:
            endpoint, resting = self.router.take(failed_it)
            try:
                # Bytes, not a ChatCompletion: the client's model building was a tenth of
                # a rollout's CPU.
                answer = endpoint.client.post("/chat/completions", body=body, cast_to=bytes)
            except Exception as exc:  # noqa: BLE001 - every failure is routed or a verdict
                fault = _fault(exc)
                if fault == "away":
                    self.router.failed(endpoint, resting, error_text(exc))
                    continue
                if fault == "timeout":
                    self.router.timed_out(endpoint)
                else:
                    self.router.answered(endpoint, failed=fault == "server")
                said = f"endpoint {endpoint.label}: {error_text(exc)}"
                if fault is None:
                    raise RequestFailed(said) from exc
                server_errors, failed_it = server_errors + 1, endpoint
                if server_errors >= SERVER_ERRORS:
                    times = f"(the endpoints failed this request {server_errors} times)"
                    raise RequestFailed(f"{said} {times}") from exc
                continue
            self.router.answered(endpoint)
            try:
                return json.loads(answer, object_hook=lambda fields: Fields(**fields))
            except ValueError as exc:
                raise RequestFailed(f"endpoint {endpoint.label}: an answer not JSON: {exc}")

    def close(self) -> None:
        """Close every client's connections."""
        for endpoint in self.router.endpoints:
            endpoint.client.close()


class Fields(types.SimpleNamespace):
    """A JSON object of an answer, its fields read as attributes like the openai client's
    types (``answer.choices[0].message.tool_calls``); a field it lacks reads as ``None``."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


def _fault(exc: BaseException) -> Literal["away", "server", "timeout"] | None:
    """Whose failure: the endpoint's, not there or busy (``away``); this request's, a server
    error or no answer in time (``server``, ``timeout``), or any other 4xx (``None``)."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "away"
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status in _AWAY_STATUSES:
        return "away"
    return "server" if isinstance(status, int) and status >= 500 else None


def server_message(exc: BaseException) -> str:
    """What the endpoint itself said in an error response (its ``error.message``,
    ``message`` or ``detail``, else the body's text), on one line, or ``""``."""
    body = getattr(exc, "body", None)
    said: object = None
    if is_object(body):
        error = body.get("error")
        said = error.get("message") if is_object(error) else error
        said = said or body.get("message") or body.get("detail")
    elif isinstance(body, str):
        said = body
    said = said or getattr(getattr(exc, "response", None), "text", "")
    return " ".join(str(said or "").split())[:300]


def error_text(exc: BaseException) -> str:
    """One line: the HTTP status with the server's own message, a timeout or the
    connection failure (no secrets: the client's messages carry no key)."""
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    if isinstance(status, int):
        said = server_message(exc)
        return f"HTTP {status} ({name}){': ' + said if said else ''}"
    if name == "APITimeoutError":
        return "timed out"
    if name == "APIConnectionError":
        cause = exc.__cause__
        detail = f": {' '.join(str(cause).split())[:200]}" if cause is not None else ""
        return f"connection failed{detail}"
    return f"{name}: {' '.join(str(exc).split())[:300]}"

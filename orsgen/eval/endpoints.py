"""The model endpoints of an evaluation (``--endpoint``, repeatable): one ``openai.OpenAI``
client each, in one :class:`~orsgen.runtime.transport.replicas.ReplicaPool` (which endpoint
takes a request, rests and outages). A request its endpoints fail is sent again within its
budget (docs/evaluating.md, "A request's budget"), then its rollout is ``failed``. The
clients never retry (``max_retries=0``): this loop is the only one, so the budget is what
the endpoints receive and ``endpoint_counts`` counts every request sent. Keys stay in the
clients: labels, log lines, errors and counts carry public URLs only."""

from __future__ import annotations

import functools
import json
import logging
import time
import types
import urllib.parse
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from orsgen.eval.config import DEFAULT_REQUEST_ATTEMPTS, EvalConfigError
from orsgen.jsonobject import is_object
from orsgen.runtime.transport.replicas import AWAY_STATUSES, FIRST_REST, MAX_REST, PoolDown
from orsgen.runtime.transport.replicas import Replica, ReplicaPool

DEFAULT_DOWN_LIMIT = 300.0
PROBE_TIMEOUT = 10.0

log = logging.getLogger("orsgen.eval")
# Every endpoint has been down for the down limit: the run stops, its rows kept.
EndpointsDown = PoolDown


class RequestFailed(Exception):
    """A request's own failure (such as HTTP 400, or its budget spent): its rollout is
    ``failed``, for this reason (naming the endpoint)."""


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
    """Raise :class:`EvalConfigError` when no endpoint answers or one refuses its key (one
    that lacks ``/models`` is fine)."""
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
class Endpoint(Replica):
    client: Any = None  # an openai.OpenAI


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
        attempts: int = DEFAULT_REQUEST_ATTEMPTS,
    ) -> None:
        import openai

        client = functools.partial(openai.OpenAI, timeout=request_timeout, max_retries=0)
        made = [
            Endpoint(public_url(u), client=client(base_url=u, api_key=k))
            for u, k in keyed(urls, keys)
        ]
        self.pool = ReplicaPool(made, down_limit, rests=rests, log=log)
        self.attempts = attempts

    def post(self, body: dict[str, Any], task: Hashable = None, until: float | None = None) -> Any:
        """One ``POST /chat/completions`` for ``task``, on whichever endpoint the pool picks,
        and again while endpoints fail it, within its budget (``attempts`` tries; ``until``,
        the rollout's deadline on ``time.monotonic``, instead bounds the tries an endpoint
        away spends); raises :class:`RequestFailed` or :class:`EndpointsDown`. The answer
        reads as a ``ChatCompletion`` does (:class:`Fields`)."""
        tries, server_errors, avoid = 0, 0, None
        while True:
            endpoint, resting = self.pool.take(avoid)
            try:
                # Bytes, not a ChatCompletion: the client's model building was a tenth of
                # a rollout's CPU.
                answer = endpoint.client.post("/chat/completions", body=body, cast_to=bytes)
            except Exception as exc:  # noqa: BLE001 - every failure is routed or a verdict
                fault, said = _fault(exc), error_text(exc, endpoint.url)
                left = None if until is None else until - time.monotonic()
                spent = tries + 1 >= self.attempts if left is None else left <= 0
                if fault == "away":
                    # Refused, or the budget's last try and no answer to a probe either: an
                    # outage, which a prompt cannot cause. It spends no budget.
                    outage = _refused(exc) or (spent and not _answers(endpoint))
                    if self.pool.failed(
                        endpoint, resting, error_text(exc), None if outage else task
                    ):
                        continue
                elif fault == "timeout":
                    self.pool.timed_out(endpoint)
                else:
                    self.pool.answered(endpoint, failed=fault == "server")
                if fault is None:
                    raise RequestFailed(said) from exc
                tries, avoid = tries + 1, endpoint
                server_errors += fault != "away"
                if spent or server_errors >= self.attempts:
                    times = f"the endpoints failed this request {tries} times"
                    raise RequestFailed(f"{said} ({times})") from exc
                rounds, whole = divmod(tries, len(self.pool.replicas))
                if fault == "away" and not whole:  # each endpoint said away: wait a rest
                    first, most = self.pool.rests
                    time.sleep(min(first * 2 ** (rounds - 1), most, left or most))
                continue
            self.pool.answered(endpoint)
            try:
                return json.loads(answer, object_hook=lambda fields: Fields(**fields))
            except ValueError as exc:
                raise RequestFailed(f"endpoint {endpoint.url}: an answer not JSON: {exc}")

    def close(self) -> None:
        for endpoint in self.pool.replicas:
            endpoint.client.close()


class Fields(types.SimpleNamespace):
    """A JSON object of an answer, read as the openai client's types are; a missing field
    reads as ``None``."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


def _refused(exc: BaseException) -> bool:
    import httpx

    return isinstance(exc.__cause__, httpx.ConnectError)


def _answers(endpoint: Endpoint) -> bool:
    """Whether ``endpoint`` answers ``GET /models``: a gateway that fails one request alone
    does, one in an outage does not."""
    import openai

    try:
        endpoint.client.with_options(timeout=PROBE_TIMEOUT, max_retries=0).models.list()
    except openai.APIStatusError as exc:
        return exc.status_code not in AWAY_STATUSES
    except openai.APIError:
        return False
    return True


def _fault(exc: BaseException) -> Literal["away", "server", "timeout"] | None:
    """Whose failure: the endpoint's, not there or busy (``away``); this request's, a server
    error or no answer in time (``server``, ``timeout``), or any other 4xx (``None``)."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "away"
    status = getattr(exc, "status_code", None)
    if status in AWAY_STATUSES:
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


def error_text(exc: BaseException, label: str = "") -> str:
    """One line: the HTTP status with the server's own message, a timeout or the
    connection failure, ``from`` the endpoint ``label`` (the client's messages carry no key)."""
    status = getattr(exc, "status_code", None)
    name, at = type(exc).__name__, f" from {label}" if label else ""
    if isinstance(status, int):
        said = server_message(exc)
        return f"HTTP {status}{at} ({name}){': ' + said if said else ''}"
    if name == "APITimeoutError":
        return f"timed out{at}"
    if name == "APIConnectionError":
        cause = exc.__cause__
        detail = f": {' '.join(str(cause).split())[:200]}" if cause is not None else ""
        return f"connection failed{at}{detail}"
    return f"{name}{at}: {' '.join(str(exc).split())[:300]}"

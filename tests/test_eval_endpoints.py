"""Several model endpoints (orsgen/eval/endpoints.py) in one replica pool (its rules are
tests/test_replicas.py's): the keys; then real HTTP: the scripted stand-in
(tests/openai_standin.py) and ports where nothing listens; nothing is mocked."""

from __future__ import annotations

import json
import re
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import openai_standin
from conftest import ROOT, eval_process, results_rows, run_eval
from serve_model import free_port

from orsgen.eval import EvalConfig, EvalConfigError
from orsgen.eval.endpoints import (
    Endpoints,
    EndpointsDown,
    RequestFailed,
    keyed,
)

BODY = {"model": "standin", "messages": [{"role": "user", "content": "Say 'fig'."}]}


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[Callable[..., openai_standin.Standin]]:
    started: list[openai_standin.Standin] = []

    def make(**options: Any) -> openai_standin.Standin:
        started.append(openai_standin.start(tmp_path, **options))
        return started[-1]

    try:
        yield make
    finally:
        for server in started:
            server.stop()


def nowhere() -> str:
    """An endpoint URL where nothing listens (the connection is refused)."""
    return f"http://127.0.0.1:{free_port()}/v1"


def test_one_key_serves_every_endpoint_or_one_each() -> None:
    urls = ["http://a/v1", "http://b/v1", "http://c/v1"]
    assert keyed(urls, "k") == [(u, "k") for u in urls]
    assert keyed(urls, ["k"]) == [(u, "k") for u in urls]
    assert keyed(urls, ["k1", "k2", "k3"]) == list(zip(urls, ["k1", "k2", "k3"], strict=True))
    assert keyed(urls, None) == [(u, "EMPTY") for u in urls]
    for wrong in (["k1", "k2"], ["k1", "k2", "k3", "k4"]):
        with pytest.raises(EvalConfigError) as raised:
            keyed(urls, wrong)
        assert raised.value.field == "endpoint_api_key"
        assert f"gives {len(wrong)} keys for 3 endpoints" in str(raised.value)
        assert "k1" not in str(raised.value)


def test_a_wrong_number_of_keys_is_one_usage_line_before_any_network() -> None:
    args = ["no/such/package", "--model", "m", "--endpoint", nowhere(), "--endpoint", nowhere()]
    args += ["--endpoint-api-key", "key-one", "--endpoint-api-key", "key-two"]
    code, out, err = run_eval([*args, "--endpoint-api-key", "key-three"], timeout=60)
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert line.startswith("orsgen eval: error: --endpoint-api-key gives 3 keys for 2 endpoints")
    assert "key-" not in line


def test_a_config_takes_one_endpoint_or_several() -> None:
    one = EvalConfig(model="m", endpoint=["http://a/v1"])
    assert one == EvalConfig(model="m", endpoint="http://a/v1")  # run.json unchanged
    assert one.endpoints == ("http://a/v1",) and one.to_json()["endpoint"] == "http://a/v1"
    two = EvalConfig(model="m", endpoint=["http://a/v1", "http://b/v1"])
    assert two.endpoints == ("http://a/v1", "http://b/v1")
    assert two.to_json()["endpoint"] == ["http://a/v1", "http://b/v1"]
    assert EvalConfig.from_json(json.loads(json.dumps(two.to_json()))) == two
    for wrong in ([], ["http://a/v1", "http://a/v1"], ["http://a/v1", ""]):
        with pytest.raises(EvalConfigError) as raised:
            EvalConfig(model="m", endpoint=wrong)
        assert raised.value.field == "endpoint"


def test_a_refused_connection_moves_the_request_to_the_endpoint_that_answers(
    standin, caplog
) -> None:
    live, dead = standin(), nowhere()
    caplog.set_level(logging.WARNING, "orsgen.eval")
    endpoints = Endpoints([dead, live.endpoint], "secret-key-1", 30.0)
    for _ in range(4):
        answer = endpoints.post(BODY)
        assert answer.choices[0].message.tool_calls  # the stand-in's scripted call
    counts = endpoints.pool.counts()
    assert counts[dead] == {"requests": 1, "failures": 1, "outages": 1}
    assert counts[live.endpoint] == {"requests": 4, "failures": 0, "outages": 0}
    assert live.chat_requests() == 4
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith(f"endpoint {dead} is down (connection failed")
    assert "secret-key-1" not in caplog.text


def test_every_endpoint_refusing_for_the_limit_raises_naming_each() -> None:
    dead = [nowhere(), nowhere()]
    endpoints = Endpoints(dead, None, 30.0, down_limit=0.5, rests=(0.05, 0.1))
    with pytest.raises(EndpointsDown) as raised:
        endpoints.post(BODY)
    said = str(raised.value)
    assert said.startswith("every endpoint has been down for 0.5 s: ")
    assert all(f"{url} (connection failed" in said for url in dead)
    counts = endpoints.pool.counts()
    assert all(counts[url]["outages"] == 1 and counts[url]["failures"] >= 1 for url in dead)


def test_a_server_error_is_retried_then_fails_its_rollout_and_the_endpoint_stays_up(
    standin, caplog
) -> None:
    """A server that answers 500 is up (transformers serve answers 500 to a tool call it
    cannot parse): the request is sent again, then fails; the endpoint never rests."""
    broken = standin(chat_status=500, chat_message="tool parser crashed")
    caplog.set_level(logging.WARNING, "orsgen.eval")
    endpoints = Endpoints([broken.endpoint], "label", 30.0, down_limit=0.01, attempts=2)
    for _ in range(3):  # a down limit of 0.01 s would stop the run at the first outage
        with pytest.raises(RequestFailed) as raised:
            endpoints.post(BODY)
        said = str(raised.value)
        assert said.startswith(f"HTTP 500 from {broken.endpoint} (InternalServerError): ")
        assert said.endswith("(the endpoints failed this request 2 times)")
    counts = endpoints.pool.counts()[broken.endpoint]
    assert counts == {"requests": 3 * 2, "failures": 3 * 2, "outages": 0}
    assert broken.received("label") == 3 * 2  # no retry hidden in the client
    assert caplog.records == []  # no outage to log
    assert broken.chat_requests() == 0  # it answered none with 200


def test_a_server_error_goes_to_the_other_endpoint(standin) -> None:
    broken, working = standin(chat_status=500), standin()
    endpoints = Endpoints([broken.endpoint, working.endpoint], None, 30.0)
    for _ in range(2):  # each goes to the broken one in its turn, then to the other
        assert endpoints.post(BODY).choices[0].message.tool_calls
    counts = endpoints.pool.counts()
    assert counts[broken.endpoint] == {"requests": 2, "failures": 2, "outages": 0}
    assert counts[working.endpoint]["requests"] == working.chat_requests() == 2


def test_a_4xx_is_the_requests_answer_and_no_outage(standin) -> None:
    refusing = standin(chat_status=400, chat_message="no such model")
    endpoints = Endpoints([refusing.endpoint, nowhere()], None, 30.0)
    with pytest.raises(RequestFailed, match="HTTP 400 .*no such model"):
        endpoints.post(BODY)
    assert endpoints.pool.counts()[refusing.endpoint] == {
        "requests": 1,
        "failures": 0,
        "outages": 0,
    }


def kill_mid_run(
    args: list[str], victim: openai_standin.Standin, served: int
) -> tuple[int, str, str, int]:
    """``orsgen eval ARGS`` (with ``--out``), with ``victim`` killed by PID once it has
    answered ``served`` requests: the exit code, stdout, stderr and the rows written then."""
    out = Path(args[args.index("--out") + 1])
    proc = eval_process(args)
    try:
        while victim.chat_requests() < served:  # it has served part of the run
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.01)
        victim.process.kill()
        victim.process.wait(timeout=30)
        written = (out / "results.jsonl").read_text().count("\n")
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    return proc.returncode, stdout, stderr, written


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_replica_killed_mid_run_costs_no_rollout(
    chance_dir, chance_server, standin, tmp_path
) -> None:
    """The acceptance test of issue 36's several endpoints: two stand-in endpoints, one
    killed by PID while the run is under way."""
    doomed, survivor = standin(delay=0.2), standin(delay=0.2)
    out = tmp_path / "run"
    args = [str(chance_dir), "--model", survivor.model, "--base-url", chance_server.url]
    args += ["--endpoint", doomed.endpoint, "--endpoint", survivor.endpoint]
    args += ["--endpoint-api-key", "secret-key-1", "--split", "test", "-n", "8"]
    run_args = [*args, "--concurrency", "4", "--no-progress", "--out", str(out)]
    code, stdout, stderr, written = kill_mid_run(run_args, doomed, served=4)
    assert code == 0, stderr
    assert written < 4 * 8  # killed mid-run
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    pairs = sorted((r["task_index"], r["sample"]) for r in rows)
    assert pairs == [(t, s) for t in range(4) for s in range(8)]  # every pair, once
    assert [r["reason"] for r in rows if r["verdict"] != "scored"] == []
    run = json.loads((out / "run.json").read_text())
    assert run["endpoint"] == [doomed.endpoint, survivor.endpoint]
    dead, alive = (run["endpoint_counts"][e.endpoint] for e in (doomed, survivor))
    assert dead["outages"] == 1 and dead["failures"] >= 1
    assert alive == {"requests": survivor.chat_requests(), "failures": 0, "outages": 0}
    answered = dead["requests"] - dead["failures"] + alive["requests"]
    assert answered == sum(r["turns"] for r in rows) == 4 * 8  # the survivor served the rest
    outages = [line for line in stderr.splitlines() if doomed.endpoint in line]
    assert len(outages) == 1 and " is down (connection failed" in outages[0], stderr
    for path in out.iterdir():
        assert "secret-key-1" not in path.read_text(errors="replace"), path
    assert "secret-key-1" not in stdout + stderr


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_endpoint_down_for_the_limit_is_exit_1_and_one_line(
    chance_dir, chance_server, standin, tmp_path
) -> None:
    only = standin(delay=0.2)
    out = tmp_path / "run"
    args = [str(chance_dir), "--model", only.model, "--base-url", chance_server.url]
    args += ["--endpoint", only.endpoint, "--endpoint-down-limit", "1", "--split", "test"]
    run_args = [*args, "-n", "8", "--concurrency", "2", "--no-progress", "--out", str(out)]
    code, _, stderr, _ = kill_mid_run(run_args, only, served=2)
    assert code == 1, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"orsgen eval: error: every endpoint has been down for 1 s: {only.endpoint} (connection "
    ), stderr
    assert last.endswith(
        f"(--endpoint-down-limit); the rows so far are in {out}: continue with --resume"
    )
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert 0 < len(rows) < 4 * 8 and all(r["verdict"] == "scored" for r in rows)
    counts = json.loads((out / "run.json").read_text())["endpoint_counts"][only.endpoint]
    assert counts["outages"] == 1 and counts["failures"] >= 1
    assert not (out / "summary.json").exists()  # the run did not finish


def test_a_request_every_endpoint_fails_alone_spends_its_attempts_and_no_endpoint_rests(
    standin,
) -> None:
    """A gateway answers 504 to every request holding 'fig' (the stand-in's --poison): one
    task's request fails within its budget of tries, and the endpoints stay up for others."""
    gates = [standin(poison="fig"), standin(poison="fig")]
    endpoints = Endpoints([g.endpoint for g in gates], None, 30.0, rests=(0.01, 0.02), attempts=3)
    with pytest.raises(RequestFailed) as raised:
        endpoints.post(BODY, task=0)
    said = str(raised.value)
    assert said.startswith(f"HTTP 504 from {gates[0].endpoint} (") or said.startswith(
        f"HTTP 504 from {gates[1].endpoint} ("
    ), said
    assert said.endswith("(the endpoints failed this request 3 times)")
    counts = endpoints.pool.counts()
    assert sum(c["requests"] for c in counts.values()) == 3
    assert all(c["outages"] == 0 for c in counts.values())  # no endpoint was taken away
    other = {**BODY, "messages": [{"role": "user", "content": "Say 'kiwi'."}]}
    assert endpoints.post(other, task=1).choices[0].message.tool_calls


def test_a_gateway_outage_spends_no_budget_and_the_down_limit_stops_it(standin) -> None:
    """One task's requests alone, every one answered 503, and so is a probe (``GET /models``):
    an outage, not the request's failure. No row fails for it: the endpoints go down."""
    gates = [standin(chat_status=503, models_status=503) for _ in range(2)]
    endpoints = Endpoints(
        [g.endpoint for g in gates], None, 30.0, down_limit=0.5, rests=(0.05, 0.1), attempts=2
    )
    with pytest.raises(EndpointsDown, match="every endpoint has been down for 0.5 s: "):
        endpoints.post(BODY, task=0)
    assert [c["outages"] for c in endpoints.pool.counts().values()] == [1, 1]


def test_with_a_rollout_deadline_the_deadline_is_the_requests_budget(standin) -> None:
    gate = standin(poison="fig")
    endpoints = Endpoints([gate.endpoint], None, 30.0, rests=(0.01, 0.02), attempts=1)
    with pytest.raises(RequestFailed, match=f"^HTTP 504 from {gate.endpoint} "):
        endpoints.post(BODY, task=0, until=time.monotonic() + 2.0)
    # Tried until the deadline, not once as the attempts would have it.
    assert endpoints.pool.counts()[gate.endpoint]["requests"] > 1
    with pytest.raises(RequestFailed):
        endpoints.post(BODY, task=0)  # no deadline: one try
    assert endpoints.pool.counts()[gate.endpoint]["outages"] == 0


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_one_poisonous_request_fails_its_rollout_and_the_run_goes_on(
    chance_dir, chance_server, standin, tmp_path
) -> None:
    """Issue 39: a gateway that always answers 504 to one task's request (two endpoints
    behind it) fails that task's rollouts, naming the answer; every other task is scored, no
    endpoint is taken away, the run exits 0, and a resume leaves the rows as they are."""
    gates = [standin(poison="damson"), standin(poison="damson")]  # task 1 of split test
    out = tmp_path / "run"
    args = [str(chance_dir), "--model", gates[0].model, "--base-url", chance_server.url]
    args += ["--endpoint", gates[0].endpoint, "--endpoint", gates[1].endpoint]
    args += ["--split", "test", "-n", "2", "--concurrency", "2", "--endpoint-down-limit", "1"]
    args += ["--no-progress", "--out", str(out)]
    code, _, stderr = run_eval(args)
    assert code == 0, stderr
    rows = results_rows(out)
    assert sorted((r["task_index"], r["sample"]) for r in rows) == [
        (t, s) for t in range(4) for s in range(2)
    ]
    for row in rows:
        if row["task_index"] != 1:
            assert row["verdict"] == "scored", row
            continue
        assert row["verdict"] == "failed" and row["reward"] is None, row
        assert re.match(r"HTTP 504 from http://127\.0\.0\.1:\d+/v1 \(", row["reason"]), row
        assert row["reason"].endswith("(the endpoints failed this request 5 times)"), row
    counts = json.loads((out / "run.json").read_text())["endpoint_counts"]
    assert [c["outages"] for c in counts.values()] == [0, 0]
    assert " is down " not in stderr
    code, _, stderr = run_eval([*args, "--resume"])
    assert code == 0, stderr
    assert results_rows(out) == rows


@pytest.mark.parametrize(
    ("fault", "options", "said"),
    [
        ({"chat_status": 500}, ["--request-attempts", "3"], "HTTP 500 from "),
        ({"delay": 30}, ["--request-attempts", "2", "--request-timeout", "0.5"], "timed out from "),
    ],
    ids=["server-error", "timeout"],
)
def test_request_attempts_are_the_requests_the_endpoint_receives(
    fault, options, said, standin, echo_server, tmp_path
) -> None:
    """Issue 45: the client never retries on its own, so ``--request-attempts N`` is N
    requests at the endpoint, each waiting ``--request-timeout`` at most, and run.json's
    ``endpoint_counts`` counts what the endpoint received."""
    model = standin(**fault)
    out = tmp_path / "run"
    args = [str(ROOT / "generated" / "echo"), "--endpoint", model.endpoint, "--model"]
    args += [model.model, "--endpoint-api-key", "label", "--base-url", echo_server.url]
    args += ["--split", "test", "--indices", "0", "--no-progress", "--out", str(out), *options]
    code, _, stderr = run_eval(args)
    assert code == 0, stderr
    attempts = int(options[1])
    [row] = results_rows(out)
    assert row["verdict"] == "failed" and row["reason"].startswith(said), row
    assert row["reason"].endswith(f"(the endpoints failed this request {attempts} times)"), row
    counts = json.loads((out / "run.json").read_text())["endpoint_counts"][model.endpoint]
    assert counts["requests"] == model.received("label") == attempts
    assert json.loads((out / "run.json").read_text())["request_timeout"] == (
        0.5 if "--request-timeout" in options else 600.0
    )

"""``orsgen serve SOURCE`` (issue 41 item 3). A recording (a run directory whose rows hold
``env_calls``) is served with no other server running: a call that continues a recorded
rollout gets its recorded result, a refusal included; a call off the recording is a tool
error naming it, and the episode goes on; its tools, splits and task counts are the package
snapshot's (``orsgen check --live``: no drift). A Python file is served as a local-file
target is. SIGTERM ends the server with exit 0, Ctrl-C with 130; what cannot be served is
one line, exit 2.

The slow tier records real evaluations of the echo environment (examples/echo_env.py) with
the scripted endpoint (tests/openai_standin.py ``--quote``, whose calls are fixed by task,
sample and ``--seed``), stops the server, and runs ``orsgen eval`` (the recorded rewards)
and a 2-step GRPOTrainer against ``orsgen serve`` of the recording.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import openai_standin
import ors_server
from conftest import ECHO_ENV, ROOT, generate_and_import, results_rows, run_eval

ECHO = ROOT / "generated" / "echo"
SEED, N = 11, 2  # echo's test split: 4 tasks, 8 rollouts, 2 of them reversed words (reward 0)

pytestmark = pytest.mark.timeout(600)


def _with_env_calls(run: Path) -> None:
    """Until ``orsgen eval`` records ``env_calls`` (issue 41 item 1, the replay branch):
    each row's calls and results from its messages (the echo adapter sends the model's
    arguments as they are; each call's reward is 1.0 on the word, which ends the episode, and
    0.0 otherwise)."""
    rows = results_rows(run)
    if all("env_calls" in row for row in rows):
        return
    for row in rows:
        calls: list[dict[str, Any]] = []
        for message in row["messages"]:
            for call in message.get("tool_calls") or []:
                arguments = json.loads(call["function"]["arguments"])
                calls.append({"tool": call["function"]["name"], "arguments": arguments})
            if message["role"] == "tool":
                right = message["content"] == f"echo: {calls[-1]['arguments']['text']}"
                right = (
                    right and f"'{calls[-1]['arguments']['text']}'" in row["messages"][0]["content"]
                )
                calls[-1].update(
                    text=message["content"], images=[], reward=float(right), finished=right
                )
        row["env_calls"] = calls
    (run / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def _record(
    server: ors_server.RunningServer, out: Path, split: str, n: int, seed: int, **standin: Any
) -> Path:
    """``orsgen eval`` of the echo package on ``server``: the recording in ``out``."""
    model = openai_standin.start(out.parent, tool="echo", argument="text", **standin)
    try:
        code, _, err = _eval(server.url, model, out, split, n, seed)
    finally:
        model.stop()
    assert code == 0, err
    _with_env_calls(out)
    return out


def _eval(
    url: str, model: openai_standin.Standin, out: Path, split: str, n: int, seed: int
) -> tuple[int, str, str]:
    args = [str(ECHO), "--endpoint", model.endpoint, "--model", model.model, "--base-url", url]
    args += ["--split", split, "-n", str(n), "--seed", str(seed), "--out", str(out)]
    return run_eval([*args, "--no-progress"])


def _package(run: Path) -> list[str]:
    """``--package`` when run.json names none (an eval before the replay branch)."""
    return (
        []
        if json.loads((run / "run.json").read_text()).get("package")
        else ["--package", str(ECHO)]
    )


REFUSED = "tool 'echo' rejected the call: Tool input validation error: text is no string"


def _row(sample: int, calls: list[dict[str, Any]]) -> dict[str, Any]:
    prompt = {"role": "user", "content": "Call echo with the word 'fig'."}
    return {
        "task_index": 0,
        "sample": sample,
        "split": "test",
        "verdict": "scored",
        "messages": [prompt],
        "env_calls": calls,
    }


def _result(word: Any, text: str, reward: float | None, **more: Any) -> dict[str, Any]:
    call = {"tool": "echo", "arguments": {"text": word}, "text": text, "images": []}
    return {**call, "reward": reward, "finished": reward == 1.0, **more}


def _recorded(run: Path, package: Path, split: str, rows: list[dict[str, Any]]) -> Path:
    """A run directory of ``rows`` of ``package`` on ``split``, as ``orsgen eval`` writes it."""
    from orsgen.canonical import tools_sha256

    snapshot = json.loads((package / "snapshot.json").read_text())["environment"]
    config = {"split": split, "package": str(package), "tools_sha256": tools_sha256(snapshot)}
    (run / "run.json").write_text(json.dumps(config))
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


@pytest.fixture(scope="module")
def handmade(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two recorded rollouts of echo's test task 0 (a refused call, a wrong word, the word;
    the word at once), as ``orsgen eval`` records them."""
    first = [
        _result(5, REFUSED, None, error="invalid_arguments"),
        _result("gif", "echo: gif", 0.0),
        _result("fig", "echo: fig", 1.0),
    ]
    rows = [_row(0, first), _row(1, [_result("fig", "echo: fig", 1.0)])]
    return _recorded(tmp_path_factory.mktemp("handmade"), ECHO, "test", rows)


@pytest.fixture(scope="module")
def recording(ors_servers: ors_server.Servers, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recorded evaluation of echo's test split; the server it ran against is stopped."""
    server = ors_servers.own(ECHO_ENV)
    try:
        return _record(server, tmp_path_factory.mktemp("rec") / "run", "test", N, SEED, quote=3)
    finally:
        server.stop()


@dataclass
class Served:
    url: str
    process: subprocess.Popen[str]

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        """Send ``sig``; the exit code and stderr."""
        self.process.send_signal(sig)
        _, err = self.process.communicate(timeout=60)
        return self.process.returncode, err


def _environ() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
    return {**env, "OPENREWARD_DISABLE_UPDATE_CHECK": "1", "PYTHONPATH": str(ROOT)}


@pytest.fixture
def serve() -> Iterator[Any]:
    """``serve(*args)``: ``orsgen serve ARGS`` as its own process, once its URL (stdout's
    first line) is out; every one started is stopped by PID at the test's end."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> Served:
        process = subprocess.Popen(
            [sys.executable, "-m", "orsgen", "serve", *args],
            cwd=ROOT,
            env=_environ(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(process.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout=120)
        if not line or not line[0].startswith("http://"):
            process.kill()
            raise AssertionError(f"orsgen serve gave no URL: {process.communicate()}")
        return Served(line[0].strip(), process)

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


def _outcomes(run: Path) -> dict[tuple[int, int], tuple[Any, ...]]:
    """Each rollout's verdict, reward and what the model read, by (task, sample)."""
    return {
        (r["task_index"], r["sample"]): (r["verdict"], r["reward"], r["messages"])
        for r in results_rows(run)
    }


@pytest.mark.slow  # two evaluations, three servers
def test_eval_against_the_served_recording_gives_the_recorded_rewards(
    recording: Path, serve: Any, orsgen_subprocess: Any, tmp_path: Path
) -> None:
    served = serve(str(recording), *_package(recording))
    model = openai_standin.start(tmp_path, tool="echo", argument="text", quote=3)
    try:
        code, _, err = _eval(served.url, model, tmp_path / "again", "test", N, SEED)
    finally:
        model.stop()
    assert code == 0, err
    recorded = _outcomes(recording)
    assert sorted(r for _, r, _ in recorded.values()) == [0.0, 0.0] + [1.0] * 6
    assert _outcomes(tmp_path / "again") == recorded
    # Its port is taken: a second server there is one line.
    port = served.url.rsplit(":", 1)[1]
    taken = orsgen_subprocess(["serve", str(recording), *_package(recording), "--port", port])
    assert taken.code == 2 and taken.stdout == "", taken
    assert taken.stderr.startswith("orsgen serve: error: cannot listen on 127.0.0.1:"), taken
    assert taken.stderr.count("\n") == 1, taken.stderr
    code, stderr = served.stop()
    assert code == 0, stderr
    assert stderr.rstrip().endswith("orsgen serve: stopped") and "Traceback" not in stderr, stderr


def test_a_session_follows_the_recording_and_a_call_off_it_is_a_tool_error(
    handmade: Path, serve: Any, orsgen_cli: Any
) -> None:
    from generated.echo import EchoEnv

    from orsgen.runtime.errors import ToolInputError, ToolOffRecordingError

    served = serve(str(handmade))
    env = EchoEnv(base_url=served.url)
    try:
        assert env.reset(task_index=0, split="test") == "Call echo with the word 'fig'."
        with pytest.raises(ToolOffRecordingError) as raised:
            env.echo(text="nope")
        off = "not in the recording: echo(text='nope') at call 1 of task 0"
        recorded = "(recorded there: echo(text=5); echo(text='fig'))"
        assert str(raised.value) == f"tool 'echo' has no recorded result: {off} {recorded}"
        # The episode goes on: the first recorded rollout, its refusal as recorded.
        with pytest.raises(ToolInputError) as refused:
            env.rollout.call("echo", {"text": 5})
        assert str(refused.value) == REFUSED
        assert env.echo(text="gif") == "echo: gif" and env.reward == 0.0
        with pytest.raises(
            ToolOffRecordingError, match="at call 3 of task 0 .recorded there: echo.text='fig'.."
        ):
            env.echo(text="damson")
        assert env.echo(text="fig") == "echo: fig" and env.reward == 1.0
        # The second recorded rollout, from a session of its own.
        env.reset(task_index=0, split="test")
        assert env.echo(text="fig") == "echo: fig" and env.reward == 1.0
        # A task the run did not evaluate: its prompt says so, and every call is off.
        assert env.reset(task_index=1, split="train") == (
            "not in the recording: task 1 of split 'train'"
        )
        with pytest.raises(
            ToolOffRecordingError,
            match="not in the recording: echo.text='banana'. at call 1 of task 1$",
        ):
            env.echo(text="banana")
    finally:
        env.close()
    # Its tools, splits and task counts are the package snapshot's: no drift.
    check = orsgen_cli(["check", str(ECHO), "--live", "--target", served.url])
    assert check.code == 0 and "no drift" in check.stderr, check.stderr
    code, stderr = served.stop()
    assert code == 0, stderr
    assert stderr.rstrip().endswith("orsgen serve: stopped") and "Traceback" not in stderr, stderr


@pytest.mark.slow  # an evaluation against orsgen serve
def test_a_call_off_the_recording_is_not_the_models_fault(
    handmade: Path, serve: Any, tmp_path: Path
) -> None:
    """Eval counts it apart: not an invalid call, not model_failed; summary.json and
    report.md show it."""
    served = serve(str(handmade))
    model = openai_standin.start(tmp_path, tool="echo", argument="text")  # never the word
    try:
        code, _, err = _eval(served.url, model, tmp_path / "off", "test", 1, SEED)
    finally:
        model.stop()
    assert code == 0, err
    rows = results_rows(tmp_path / "off")
    assert rows and all(r["invalid_tool_calls"] == 0 for r in rows), rows
    echo = json.loads((tmp_path / "off" / "summary.json").read_text())["tools"]["echo"]
    assert echo["model_failed"] == 0 and echo["environment_failed"] == 0, echo
    assert echo["off_recording"] == echo["calls"] == len(rows), echo
    report = (tmp_path / "off" / "report.md").read_text()
    assert f"- calls off the recording: {len(rows)} (" in report, report
    assert {r["reason"] for r in rows} == {"only calls off the recording"}, rows
    assert served.stop()[0] == 0


@pytest.mark.slow  # two orsgen serve processes
def test_a_port_serves_again_at_once_after_clients_were_connected(
    handmade: Path, serve: Any
) -> None:
    """The CI recipe restarts ``orsgen serve --port P``: a client's connection, still open
    when the server stops, leaves the port in TIME_WAIT (SO_REUSEADDR lets it bind)."""
    import socket

    port = str(ors_server.free_port())
    served = serve(str(handmade), "--port", port)
    client = socket.create_connection(("127.0.0.1", int(port)))
    client.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert client.recv(1024).startswith(b"HTTP/1.1 200"), "no answer"
    try:
        assert served.stop()[0] == 0  # the server closes the client's connection first
    finally:
        client.close()
    again = serve(str(handmade), "--port", port)
    assert again.url.endswith(f":{port}")
    assert again.stop()[0] == 0


@pytest.mark.slow  # orsgen processes and servers; the fast tier stays under 4 min
def test_a_recording_serves_its_packages_terminal_and_task_tools(
    serve: Any, orsgen_cli: Any, tmp_path: Path
) -> None:
    """generated/rich: renamed parameters, a task tool (probed on task 0) and a terminal
    tool, served from a recording with no calls: ``orsgen check --live`` finds no drift."""
    rich = ROOT / "generated" / "rich"
    row = {"task_index": 0, "sample": 0, "verdict": "unfinished", "messages": [], "env_calls": []}
    served = serve(str(_recorded(tmp_path, rich, "train", [row])))
    check = orsgen_cli(["check", str(rich), "--live", "--target", served.url])
    assert check.code == 0 and "no drift" in check.stderr, check.stderr
    assert "1 task tool from the probe of task 0" in check.stderr, check.stderr
    assert served.stop()[0] == 0


@pytest.mark.slow  # orsgen processes and servers; the fast tier stays under 4 min
def test_a_python_file_is_served_until_ctrl_c(serve: Any, orsgen_cli: Any) -> None:
    served = serve(str(ECHO_ENV))
    check = orsgen_cli(["check", str(ECHO), "--live", "--target", served.url])
    assert check.code == 0 and "no drift" in check.stderr, check.stderr
    code, stderr = served.stop(signal.SIGINT)
    assert code == 130 and stderr.rstrip().endswith("orsgen: interrupted"), stderr
    assert "Traceback" not in stderr, stderr


def _variant(source: str, handmade: Path, tmp_path: Path) -> Path:
    """``handmade`` (RUN), a copy whose rows lack env_calls (OLD: an older orsgen eval's),
    or whose run.json names no package (NOPACKAGE) or one that is gone (MOVED); any other
    ``source`` as it is."""
    if source not in ("RUN", "OLD", "NOPACKAGE", "MOVED"):
        return Path(source)
    if source == "RUN":
        return handmade
    run = Path(shutil.copytree(handmade, tmp_path / source))
    if source == "OLD":
        rows = [{k: v for k, v in r.items() if k != "env_calls"} for r in results_rows(run)]
        (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        config = json.loads((run / "run.json").read_text())
        package = None if source == "NOPACKAGE" else "/gone"
        (run / "run.json").write_text(json.dumps({**config, "package": package}))
    return run


@pytest.mark.parametrize(
    ("source", "extra", "said"),
    [
        ("nowhere", [], "nowhere is neither a Python file that defines Environment classes"),
        ("README.md", [], "README.md is neither a Python file"),
        (str(ECHO_ENV), ["--package", str(ECHO)], "--package applies to a run directory only"),
        (str(ECHO), [], "is not an orsgen eval run (no run.json and results.jsonl)"),
        ("RUN", ["--package", str(ROOT)], "is not a generated package (no snapshot.json)"),
        ("RUN", ["--package", str(ROOT / "generated" / "rich")], "its tools differ"),
        ("OLD", [], "2 of 2 rows record no tool calls and results"),
        ("NOPACKAGE", [], "run.json names no package; pass --package DIR"),
        ("MOVED", [], "/gone is not a generated package (no snapshot.json); it has moved"),
        ("RUN", ["--port", "70000"], "argument --port: must be between 0 and 65535, got 70000"),
        ("RUN", ["--host", ""], "argument --host: is empty, which would listen on every"),
    ],
)
def test_what_cannot_be_served_is_one_line(
    source: str,
    extra: list[str],
    said: str,
    handmade: Path,
    orsgen_subprocess: Any,
    tmp_path: Path,
) -> None:
    where = _variant(source, handmade, tmp_path)
    run = orsgen_subprocess(["serve", str(where), *extra], timeout=60)
    assert run.code == 2 and run.stdout == "", run
    assert run.stderr.startswith("orsgen serve: error: ") and run.stderr.count("\n") == 1, run
    assert said in run.stderr, run.stderr


@pytest.mark.slow  # real training
def test_grpo_trains_against_the_served_recording(
    ors_servers: ors_server.Servers, serve: Any, tmp_path: Path
) -> None:
    """A 2-step GRPOTrainer run with the training script's setup (tests/test_e2e_grpo.py),
    its environment ``orsgen serve`` of a recording of the train split: the tiny model,
    warmed up on the live server's episodes, makes the recorded calls and earns their
    rewards, with the live server stopped."""
    import functools

    import tiny_model
    from generated.echo import EchoEnv, load_tasks, outcome_reward
    from test_e2e_grpo import _warmed_model
    from trl import GRPOTrainer

    server = ors_servers.own(ECHO_ENV)
    try:
        run = _record(server, tmp_path / "run", "train", 1, SEED, quote=10**9)
        _, model_dir = _warmed_model(server, tmp_path)
    finally:
        server.stop()
    assert [r["reward"] for r in results_rows(run)] == [1.0] * 4  # the word, on each task
    served = serve(str(run), *_package(run))

    returned: list[float | None] = []

    def reward(environments: Any, **kwargs: Any) -> list[float | None]:
        rewards = outcome_reward(environments, **kwargs)
        returned.extend(rewards)
        return rewards

    reward.__name__ = outcome_reward.__name__
    trainer = GRPOTrainer(
        model=str(model_dir),
        args=tiny_model.cpu_grpo_config(tmp_path / "out", max_steps=2),
        train_dataset=load_tasks(base_url=served.url),
        environment_factory=functools.partial(EchoEnv, base_url=served.url),
        reward_funcs=reward,
    )
    try:
        trainer.train()
    finally:
        EchoEnv.close_all()
    assert len(returned) == 4 and 1.0 in returned, returned
    logged = [h for h in trainer.state.log_history if "rewards/outcome_reward/mean" in h]
    assert len(logged) == 2, trainer.state.log_history
    code, stderr = served.stop()
    assert code == 0 and "Traceback" not in stderr, stderr


@pytest.mark.slow  # an evaluation, then orsgen serve of it
def test_the_served_prompt_is_the_whole_prompt_the_model_saw(
    ors_servers: Any, serve: Any, tmp_path: Path
) -> None:
    """A prompt past results.jsonl's 8,000 characters is served whole, and a content list's
    text parts as text (issue 45 item 6). evaluate() from Python: images reach the model as
    a content list with ``multimodal=True``, which the CLI does not set."""
    from orsgen.eval import EvalConfig, evaluate

    sys.path.insert(0, str(ROOT / "tests" / "envs"))
    from prompt_env import LONG

    env_file = ROOT / "tests" / "envs" / "prompt_env.py"
    module = generate_and_import(env_file, tmp_path / "prompt_pkg")
    model = openai_standin.start(tmp_path)
    run = tmp_path / "run"
    try:
        config = EvalConfig(model=model.model, endpoint=model.endpoint, split="test", n=2)
        adapter = {"base_url": ors_servers(env_file).url, "multimodal": True}
        evaluate(module.PromptEnv, config, adapter=adapter, out=run, progress=False)
    finally:
        model.stop()
    first = {r["task_index"]: r["messages"][0]["content"] for r in results_rows(run)}
    assert len(first[0]) < len(LONG) and isinstance(first[1], list), first  # the rows' are cut
    served = serve(str(run))
    env = module.PromptEnv(base_url=served.url)
    try:
        assert env.reset(task_index=0, split="test") == LONG
        assert env.reset(task_index=1, split="test") == "Look at this.\nSay 'fig'."
    finally:
        env.close()
    code, stderr = served.stop()
    assert code == 0, stderr
    # Once per task: two samples each, one line.
    assert sorted(json.loads(line)["task_index"] for line in open(run / "prompts.jsonl")) == [0, 1]

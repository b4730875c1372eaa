from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "examples"))

# Tests only ever talk to loopback servers they start themselves.
os.environ.setdefault("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
for var in ("OPENREWARD_API_URL", "OPENREWARD_SESSION_URL", "OPENREWARD_URL", "OPENREWARD_API_KEY"):
    os.environ.pop(var, None)

import ors_server  # noqa: E402

try:  # CI explores the same examples every run (a fixed seed per test), so a run is reproducible.
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("ci", derandomize=True)
    if os.environ.get("CI"):
        _hypothesis_settings.load_profile("ci")
except ImportError:  # pragma: no cover - hypothesis is a dev dependency
    pass

ECHO_ENV = ROOT / "examples" / "echo_env.py"
RICH_ENV = ROOT / "examples" / "rich_env.py"


@pytest.fixture(scope="session")
def ors_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ors_server.Servers]:
    """The one source of ORS servers: real servers on 127.0.0.1, each on a free port,
    shared per environment file and options, stopped by PID (see ``ors_server.Servers``)."""
    servers = ors_server.Servers(tmp_path_factory.mktemp("ors-server-logs"))
    try:
        yield servers
    finally:
        servers.stop_all()


@pytest.fixture(scope="session")
def echo_server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(ECHO_ENV)


@pytest.fixture(scope="session")
def rich_server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(RICH_ENV)


# --- Running the CLI and importing what it generated ------------------------------------

import contextlib  # noqa: E402
import importlib  # noqa: E402
import inspect  # noqa: E402
import io  # noqa: E402
import subprocess  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from types import ModuleType  # noqa: E402

ENVS = ROOT / "tests" / "envs"
RULES_ENV = ENVS / "rules_env.py"
RULES_SHARED_TOOLS = {"answer", "score", "explode"}  # tests/envs/rules_env.py
TWO_ENVS = ENVS / "two_envs.py"


@dataclass
class CliRun:
    code: int
    stdout: str
    stderr: str


def _run_cli_subprocess(
    args: list[str], env: dict[str, str] | None = None, timeout: float = 120.0
) -> CliRun:
    """``python -m orsgen ARGS`` as a separate process, from the repository root."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
    base.update({"OPENREWARD_DISABLE_UPDATE_CHECK": "1", "OPENREWARD_LOG_LEVEL": "WARNING"})
    proc = subprocess.run(
        [sys.executable, "-m", "orsgen", *args],
        cwd=ROOT,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return CliRun(proc.returncode, proc.stdout, proc.stderr)


def _run_cli_in_process(args: list[str]) -> CliRun:
    """``orsgen.cli.main(ARGS)`` in this process, capturing its output (cheaper than a
    subprocess when the test is about the generated package, not the process)."""
    from orsgen.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return CliRun(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def orsgen_subprocess() -> Callable[..., CliRun]:
    return _run_cli_subprocess


@pytest.fixture(scope="session")
def orsgen_cli() -> Callable[[list[str]], CliRun]:
    return _run_cli_in_process


def import_generated(directory: Path) -> ModuleType:
    """Import a generated package from its directory (the directory name is the package)."""
    parent = str(directory.parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    importlib.invalidate_caches()
    return importlib.import_module(directory.name)


def generate_and_import(target: str | Path, out: Path, **options: Any) -> ModuleType:
    """Run orsgen's pipeline (``orsgen.generate.pipeline.run.run``) on ``target`` (an environment file,
    a server URL, ...) into ``out``, a fresh package directory, and import the package it
    wrote. ``options`` are ``Request`` fields (``class_name=``, ``task_tools=``, ...)."""
    from orsgen.generate.pipeline.run import Request, run

    result = run(Request(str(target), out, **options))
    assert result.written, [d.format() for d in result.diagnostics]
    return import_generated(out)


@pytest.fixture(scope="session")
def generate_package(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., ModuleType]:
    """:func:`generate_and_import` into a fresh directory named ``package``. Package names
    must be unique within the test session."""

    def make(package: str, target: str, **options: Any) -> ModuleType:
        return generate_and_import(
            target, tmp_path_factory.mktemp(f"gen-{package}") / package, **options
        )

    return make


def trl_tools(cls: type) -> set[str]:
    """The tool names GRPOTrainer would expose for an environment class (trl 1.16)."""
    return {
        name
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


@pytest.fixture(scope="session")
def rules_server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(RULES_ENV)


@pytest.fixture(scope="session")
def rules_pkg(
    rules_server: ors_server.RunningServer, generate_package: Callable[..., ModuleType]
) -> ModuleType:
    """The rules environment's adapter package, generated with the default probe (task 0)."""
    return generate_package("rules_default", rules_server.url, class_name="RulesEnv")


@pytest.fixture
def fresh_runtime() -> Iterator[None]:
    """A runtime test starts with no learned prefetch pattern and no drift verdict, and
    leaves no close in flight."""
    import runtime_hooks

    runtime_hooks.forget_learned_state()
    yield
    runtime_hooks.forget_learned_state()
    runtime_hooks.drain()


def served_package(
    servers: ors_server.Servers, env_file: Path, out: Path
) -> tuple[Any, ors_server.RunningServer]:
    """Generate and import the package for an environment file, and the session's server
    for that file."""
    return generate_and_import(env_file, out), servers(env_file)


@pytest.fixture
def capacity_proxy(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """``capacity_proxy(upstream_url, limit=..., refuse=..., seed=...)`` starts a
    capacity-limiting proxy (``tests/capacity_proxy.py``) in front of a real server, as its
    own process on 127.0.0.1; every proxy a test started is stopped by PID at its end."""
    import capacity_proxy as _capacity_proxy

    started: list[_capacity_proxy.Proxy] = []

    def make(upstream: str, **options: Any) -> _capacity_proxy.Proxy:
        proxy = _capacity_proxy.start(upstream, log_dir=tmp_path, **options)
        started.append(proxy)
        return proxy

    try:
        yield make
    finally:
        for proxy in started:
            proxy.stop()


def said(call: Callable[[], object]) -> str:
    """What the model reads from a tool call: the text it returns, or the text of what it
    raises (TRL catches a tool's exception and shows the model ``{"error": str(e)}``)."""
    try:
        return str(call())
    except Exception as exc:  # noqa: BLE001 - either way, the model reads this text
        return str(exc)


def failed(call: Callable[..., object], *args: Any, **kwargs: Any) -> Any:
    """Run a tool call that must fail; returns the ``ToolCallFailure`` it raised. A failed
    call raises so that TRL counts it (``trl/trainer/grpo_trainer.py``, the ``except
    Exception`` around each tool call, around line 1981) and shows the model its text."""
    from orsgen.runtime.errors import ToolCallFailure

    try:
        out = call(*args, **kwargs)
    except ToolCallFailure as exc:
        return exc
    raise AssertionError(f"the call did not raise a ToolCallFailure; it returned {out!r}")


# --- The evaluation tests' servers: tests/envs/chance_env.py and the tiny model behind a real
# `transformers serve` (tests/test_eval.py, test_sft.py and test_recipes.py share one of each
# per session) ------------------------------------------------------------------------------

from serve_model import ModelServer  # noqa: E402


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[Any]:
    """The scripted OpenAI-compatible stand-in (tests/openai_standin.py) with its defaults,
    stopped by PID after the test (a module may define its own ``standin``)."""
    import openai_standin

    server = openai_standin.start(tmp_path)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def chance_server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    from chance_model import CHANCE_ENV

    return ors_servers(CHANCE_ENV)


@pytest.fixture(scope="session")
def chance_pkg(
    chance_server: ors_server.RunningServer, generate_package: Callable[..., ModuleType]
) -> ModuleType:
    return generate_package("chance_eval", chance_server.url, class_name="ChanceEnv")


@pytest.fixture(scope="session")
def chance_dir(chance_pkg: ModuleType) -> Path:
    return Path(chance_pkg.__file__).parent


@pytest.fixture(scope="session")
def tiny_model(
    chance_pkg: ModuleType,
    chance_server: ors_server.RunningServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    """The tiny model warmed up on chance_env's prompts and the adapter's own tool JSON."""
    from chance_model import SPLITS, warm_chance_model

    tasks = [t for tasks in SPLITS.values() for t in tasks]
    adapter = chance_pkg.ChanceEnv(base_url=chance_server.url)  # no I/O: its methods only
    return warm_chance_model(tmp_path_factory.mktemp("tiny-model"), adapter, tasks)


@pytest.fixture(scope="session")
def model_server(
    tiny_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ModelServer]:
    from serve_model import start_model_server

    server = start_model_server(tiny_model, tmp_path_factory.mktemp("serve-logs"))
    try:
        yield server
    finally:
        server.stop()


def eval_process(args: list[str], command: str = "eval", **popen: Any) -> subprocess.Popen[str]:
    """``python -m orsgen eval ARGS`` (or another ``command``) as its own process, from the
    repository root, with no ORS or endpoint credentials from this environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREWARD_")}
    env.update({"OPENREWARD_DISABLE_UPDATE_CHECK": "1", "PYTHONPATH": str(ROOT)})
    env.pop("OPENAI_API_KEY", None)
    return subprocess.Popen(
        [sys.executable, "-m", "orsgen", command, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def run_eval(args: list[str], timeout: float = 300, command: str = "eval") -> tuple[int, str, str]:
    """:func:`eval_process` to its end: (exit code, stdout, stderr)."""
    proc = eval_process(args, command)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    return proc.returncode, out, err


def eval_args(package: Path, server: ors_server.RunningServer, model: Any) -> list[str]:
    """``orsgen eval``'s arguments for ``package`` on ``server`` against ``model`` (anything
    with ``endpoint`` and ``model``: a served tiny model or a scripted stand-in)."""
    return [
        str(package),
        "--endpoint",
        model.endpoint,
        "--model",
        model.model,
        "--base-url",
        server.url,
        "--no-progress",
    ]


def results_rows(out: Path) -> list[dict[str, Any]]:
    """The rows of ``out``'s results.jsonl."""
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def counted_adapters(
    cls: Any, url: str, fail_first_close: bool = False
) -> tuple[Callable[[], Any], list[Any], list[Any]]:
    """A factory of ``cls`` adapters on ``url`` that records each one made and each one
    closed; with ``fail_first_close`` the first ``close()`` raises ``RuntimeError("close
    failed")`` after closing (so a caller must still close the others)."""
    made: list[Any] = []
    closed: list[Any] = []

    class Counted(cls):  # type: ignore[misc, valid-type]
        def close(self) -> Any:
            closed.append(self)
            done = super().close()
            if fail_first_close and len(closed) == 1:
                raise RuntimeError("close failed")
            return done

    def factory() -> Any:
        env = Counted(base_url=url)
        made.append(env)
        return env

    return factory, made, closed

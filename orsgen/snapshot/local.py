"""Serve the ORS environments defined in a local Python file on 127.0.0.1, in-process."""

from __future__ import annotations

import importlib.util
import inspect
import socket
import sys
import threading
import time
import urllib.request
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from orsgen.runtime.transport import http
from orsgen.snapshot.errors import TargetError


def load_module(path: Path) -> ModuleType:
    """Import a file as a module. Its own code runs, as it would under any ORS server."""
    if not path.is_file():
        raise TargetError(f"{path}: no such file")
    name = f"_orsgen_local_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"{path}: cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - a user file may raise anything
        del sys.modules[name]
        raise TargetError(f"{path}: importing it failed: {type(exc).__name__}: {exc}") from None
    except SystemExit as exc:
        # Else a script that exits at import would end orsgen silently with its exit code.
        del sys.modules[name]
        raise TargetError(
            f"{path}: importing it called sys.exit({exc.code!r}); guard the file's "
            "script code with `if __name__ == '__main__':`"
        ) from None
    return module


def environments_in(module: ModuleType, path: Path) -> list[type[Any]]:
    """The concrete ``Environment`` subclasses defined in (not imported into) the file."""
    if "openreward.environments" not in sys.modules:
        # Nothing can subclass Environment: said without paying seconds for importing the SDK.
        raise TargetError(f"{path}: defines no ORS Environment subclass")
    from openreward.environments import Environment  # type: ignore[import-untyped]

    concrete = [
        obj
        for _, obj in inspect.getmembers(module, inspect.isclass)
        if issubclass(obj, Environment) and obj is not Environment and not inspect.isabstract(obj)
    ]
    found = [obj for obj in concrete if obj.__module__ == module.__name__]
    if not found and concrete:
        imported = sorted(f"{obj.__name__} (from {obj.__module__})" for obj in concrete)
        raise TargetError(
            f"{path}: defines no ORS Environment subclass of its own; it imports "
            f"{', '.join(imported)}, and orsgen serves only the classes a file defines: "
            "name the file that defines it"
        )
    if not found:
        raise TargetError(f"{path}: defines no ORS Environment subclass")
    return sorted(found, key=lambda cls: cls.__name__)


@contextmanager
def _file_dir_on_path(path: Path) -> Generator[None, None, None]:
    directory = str(path.resolve().parent)
    added = directory not in sys.path
    if added:
        sys.path.insert(0, directory)
    try:
        yield
    finally:
        if added and directory in sys.path:
            sys.path.remove(directory)


@contextmanager
def serve_file(
    path: Path, host: str = "127.0.0.1", port: int = 0
) -> Generator[tuple[str, dict[str, str]], None, None]:
    """An in-process ORS server for the file: its URL and each served name's class name."""
    with _file_dir_on_path(path):
        envs = environments_in(load_module(path), path)
        with serve_environments(envs, str(path), host, port) as url:
            yield url, {cls.name().lower(): cls.__name__ for cls in envs}


@contextmanager
def serve_environments(
    envs: list[type[Any]], what: str, host: str = "127.0.0.1", port: int = 0
) -> Generator[str, None, None]:
    """The URL of the SDK's ``Server`` of ``envs`` in a thread, until the context ends."""
    import uvicorn
    from openreward.environments import Server  # pyright: ignore[reportMissingTypeStubs]

    try:
        app = Server(envs).app
    except Exception as exc:  # noqa: BLE001 - building the server runs user code (list_splits)
        raise TargetError(
            f"{what}: not a valid ORS environment: {type(exc).__name__}: {exc}"
        ) from None
    _fresh_sse_exit_event()
    # Bound here and handed to uvicorn: choosing a free port and binding it later races with
    # other processes. SO_REUSEADDR as uvicorn sets it: a port in TIME_WAIT serves again at once.
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise TargetError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(app, host=host, port=port, log_level="error", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="orsgen-local-server", daemon=True
    )
    thread.start()
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    try:
        _wait_ready(url, thread)
        yield url
    finally:
        http.forget(url)  # before the server goes: its port may serve another server next
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def _fresh_sse_exit_event() -> None:
    """sse-starlette's one exit event is bound to the first server's loop; a later server's
    first stream would fail ("bound to a different event loop")."""
    try:
        from sse_starlette.sse import AppStatus  # pyright: ignore[reportMissingTypeStubs]
    except ImportError:  # the SDK no longer streams through sse-starlette
        return
    AppStatus.should_exit_event = None


def _wait_ready(url: str, thread: threading.Thread, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    # Loopback never goes through an HTTP proxy, whatever *_proxy variables say.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    while time.monotonic() < deadline:
        if not thread.is_alive():
            raise TargetError(f"the local server for {url} stopped during start-up")
        try:
            with opener.open(f"{url}/health", timeout=1) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise TargetError(f"the local server at {url} did not start within {timeout:g} s")

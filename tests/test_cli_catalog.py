"""Catalog targets (``namespace/name``): snapshot and train through the SDK's platform
mode, with a local single-host server standing in for the platform via
``OPENREWARD_API_URL``/``OPENREWARD_SESSION_URL`` and ``OPENREWARD_API_KEY``."""

from __future__ import annotations

import json

import pytest

from conftest import import_generated

pytestmark = pytest.mark.timeout(120)

FAKE_KEY = "orsgen-fake-catalog-key-7c1d9e"
DEPLOYMENT = "testns/echo"


@pytest.fixture
def platform(monkeypatch, echo_server):
    monkeypatch.setenv("OPENREWARD_API_KEY", FAKE_KEY)
    monkeypatch.setenv("OPENREWARD_API_URL", echo_server.url)
    monkeypatch.setenv("OPENREWARD_SESSION_URL", echo_server.url)
    echo_server.reset_counts()
    return echo_server


def test_catalog_target_snapshots_and_trains(platform, orsgen_cli, tmp_path) -> None:
    out = tmp_path / "echo_catalog"
    run = orsgen_cli([DEPLOYMENT, "-o", str(out), "--class-name", "CatalogEchoEnv"])
    assert run.code == 0, run.stderr
    snapshot = json.loads((out / "snapshot.json").read_text())
    env_facts = snapshot["environment"]
    assert env_facts["identity"]["deployment"] == DEPLOYMENT
    assert env_facts["target"] == {"kind": "catalog", "value": DEPLOYMENT}
    assert {t["name"] for t in env_facts["tools"]} == {"echo"}
    assert {t["name"] for t in env_facts["task_tools"]} == {"hint"}  # task 0 has a hint
    # The snapshot went through platform mode: deployment header and the key as a secret.
    assert platform.deployments().get(DEPLOYMENT, 0) > 0
    assert platform.secret_names().get("api_key", 0) > 0
    # The key is never written or printed.
    for path in out.iterdir():
        assert FAKE_KEY not in path.read_text(), path
    assert FAKE_KEY not in run.stdout + run.stderr

    pkg = import_generated(out)
    env_cls = pkg.CatalogEchoEnv
    assert env_cls.DEPLOYMENT == DEPLOYMENT
    platform.reset_counts()
    before = platform.open_sessions()  # the shared server may hold other tests' sessions
    # No base_url: the adapter and load_tasks find the platform from the environment.
    ds = pkg.load_tasks(num_tasks=2)
    assert ds["target"] == ["apple", "banana"]
    env = env_cls()
    try:
        assert "cherry" in env.reset(task_index=2)
        assert env.echo(text="cherry") == "echo: cherry"
        assert env.reward == 1.0 and env.finished
    finally:
        env.close()
    assert platform.deployments().get(DEPLOYMENT, 0) > 0
    assert platform.requests().get("POST /create", 0) >= 1
    assert platform.wait_sessions(before) == before


def test_catalog_without_api_key_is_a_usage_error(orsgen_subprocess, echo_server, tmp_path) -> None:
    run = orsgen_subprocess(
        [DEPLOYMENT, "-o", str(tmp_path / "pkg")],
        env={"OPENREWARD_API_URL": echo_server.url, "OPENREWARD_SESSION_URL": echo_server.url},
    )
    assert run.code == 2
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert "API key" in lines[0] and DEPLOYMENT in lines[0]
    assert not (tmp_path / "pkg").exists()

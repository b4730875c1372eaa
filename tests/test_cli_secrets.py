"""Secrets (``--secret NAME=VALUE``) and API keys (``--api-key``) reach the server but
never the snapshot, the generated code, or anything the CLI prints."""

from __future__ import annotations

import pytest

import ors_server

pytestmark = pytest.mark.timeout(120)

SECRET = "orsgen-fake-secret-value-5b8f2a"
API_KEY = "orsgen-fake-api-key-93e4c1"


def assert_nowhere(run, out) -> None:
    assert SECRET not in run.stdout + run.stderr
    assert API_KEY not in run.stdout + run.stderr
    if out is not None and out.exists():
        files = [p for p in out.rglob("*") if p.is_file()]
        assert files
        for path in files:
            text = path.read_bytes().decode("utf-8", "replace")
            assert SECRET not in text and API_KEY not in text, path


def test_secrets_are_used_but_never_written(echo_server, orsgen_subprocess, tmp_path) -> None:
    echo_server.reset_counts()
    out = tmp_path / "echo_secret"
    run = orsgen_subprocess(
        [echo_server.url, "-o", str(out), "--secret", f"TOKEN={SECRET}", "--api-key", API_KEY]
    )
    assert run.code == 0, run.stderr
    # The probe session carried the secret (by name; the server harness never keeps values).
    assert echo_server.secret_names().get("TOKEN", 0) >= 1
    assert (out / "snapshot.json").is_file()
    assert_nowhere(run, out)


@pytest.mark.slow
def test_secrets_stay_out_of_error_output(orsgen_subprocess, tmp_path) -> None:
    port = ors_server.free_port()
    out = tmp_path / "never"
    run = orsgen_subprocess(
        [
            f"http://127.0.0.1:{port}",
            "-o",
            str(out),
            "--secret",
            f"TOKEN={SECRET}",
            "--api-key",
            API_KEY,
        ]
    )
    assert run.code == 2
    assert_nowhere(run, None)
    assert not out.exists()


def test_a_secret_inside_the_environment_facts_blocks_the_write(
    echo_server, orsgen_cli, tmp_path
) -> None:
    """If a secret value ever turned up in what the server says (here: a "secret" equal
    to a word in a tool description), orsgen refuses to write rather than leak it."""
    out = tmp_path / "refused"
    run = orsgen_cli([echo_server.url, "-o", str(out), "--secret", "T=Echo a word back"])
    assert run.code == 1
    assert "secret" in run.stderr
    assert "Echo a word back" not in run.stderr
    assert not out.exists()

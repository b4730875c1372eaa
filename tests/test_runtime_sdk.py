"""orsgen/runtime/transport/sdk.py: how the runtime hands the SDK its HTTP clients. (Its session
wrapper on a real server: the never-resend call in tests/test_runtime_adapter_faults.py,
pings in tests/test_runtime_sdk_keepalive.py, lost sessions in
tests/test_runtime_health_outage.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from orsgen.runtime.transport import sdk

pytestmark = pytest.mark.usefixtures("fresh_runtime")


def test_session_client_has_the_sdks_env_server_retry_policy_in_any_order() -> None:
    """The SDK retries env-server errors narrowly (a 500 there is user code failing);
    a URL that serves as both API and session URL gets that policy whichever came first,
    and an API-only URL keeps the SDK's default."""
    from openreward.api._session.http import _resolve_policy

    from orsgen.runtime.transport.process import current

    async def clients() -> tuple[Any, Any, Any]:
        both = "http://127.0.0.1:9"  # never contacted
        api_first = sdk.client_for(both, env_server=False)
        return (
            api_first,
            sdk.client_for(both, env_server=True),
            sdk.client_for("http://127.0.0.1:10", env_server=False),
        )

    api_first, session, api_only = current().run(clients(), timeout=5)
    assert api_first is session and _resolve_policy(session) == "env-server"
    assert _resolve_policy(api_only) == "api"

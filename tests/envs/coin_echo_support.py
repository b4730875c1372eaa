"""A hand-written adapter for coin_echo_env.py (what orsgen would generate; no snapshot, so
no drift guard), importable by spawned processes."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from orsgen.runtime.adapter import OrsAdapter, SelfScoring

COIN_ECHO_ENV = Path(__file__).resolve().parent / "coin_echo_env.py"


class CoinEchoAdapter(OrsAdapter):
    """Echo the task's word."""

    ENV_NAME: ClassVar[str | None] = "coinechoenv"
    WIRE_NAMES: ClassVar[dict[str, tuple[str, dict[str, str]]]] = {
        "echo": ("echo", {"text": "text"}),
    }

    def echo(self, text: str) -> str:
        """Echo a word; passes with the task's probability.

        Args:
            text: The word to echo.
        """
        return str(self._call("echo", {"text": text}))


class ScoredCoinEchoAdapter(SelfScoring, CoinEchoAdapter):
    """CoinEchoAdapter with get_reward(), for AsyncGRPO."""

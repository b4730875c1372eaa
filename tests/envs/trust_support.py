"""A hand-written adapter for trust_env.py (what orsgen would generate; no snapshot, so no
drift guard), importable by spawned processes."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from orsgen.runtime.adapter import OrsAdapter, SelfScoring

TRUST_ENV = Path(__file__).resolve().parent / "trust_env.py"


class TrustAdapter(OrsAdapter):
    """Echo the task's word."""

    ENV_NAME: ClassVar[str | None] = "trustenv"
    WIRE_NAMES: ClassVar[dict[str, tuple[str, dict[str, str]]]] = {
        "echo": ("echo", {"text": "text"}),
        "hint": ("hint", {}),
    }

    def echo(self, text: str) -> str:
        """Echo a word; scores 1.0 when it is the task's word.

        Args:
            text: The word to echo.
        """
        return str(self._call("echo", {"text": text}))

    def hint(self) -> str:
        """Get a hint about the word (no reward)."""
        return str(self._call("hint", {}))


class ScoredTrustAdapter(SelfScoring, TrustAdapter):
    """TrustAdapter with get_reward(), for AsyncGRPO."""

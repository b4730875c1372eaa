"""Upload: rollouts in OpenReward's runs UI (``upload_run=``, ``orsgen eval --upload-run``):
``build`` makes a settled rollout's record, ``uploader`` sends it. Above ``records``."""

from __future__ import annotations

from orsgen.runtime.upload.record import UploadRun
from orsgen.runtime.upload.uploader import flush

__all__ = ["UploadRun", "flush"]

"""Rollouts in OpenReward's runs UI (``upload_run=`` on an adapter, ``orsgen eval
--upload-run NAME``): the public names of :mod:`orsgen.runtime.rollouts.upload`."""

from __future__ import annotations

from orsgen.runtime.rollouts.upload import UploadRun, flush

__all__ = ["UploadRun", "flush"]

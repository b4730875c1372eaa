"""Upload: rollouts in OpenReward's runs UI (``upload_run=`` on an adapter, ``orsgen eval
--upload-run NAME``). ``build`` turns a settled rollout into a record, ``uploader`` sends
records through the SDK's upload client from a few background threads per process, and
``record`` is the record and :class:`UploadRun`.

Above :mod:`orsgen.runtime.records`, below :mod:`orsgen.runtime.rollouts`.
"""

from __future__ import annotations

from orsgen.runtime.upload.record import UploadRun
from orsgen.runtime.upload.uploader import flush

__all__ = ["UploadRun", "flush"]

"""Upload: rollouts in OpenReward's runs UI (``upload_run=`` on an adapter, ``orsgen eval
--upload-run NAME``). ``build`` turns a settled rollout into a record, ``uploader`` sends
records from one background thread per process, ``wire`` is the requests it sends, and
``record`` the record and :class:`UploadRun`.

Above :mod:`orsgen.runtime.records`, below :mod:`orsgen.runtime.rollouts`.
"""

from __future__ import annotations

from orsgen.runtime.upload.record import UploadRun
from orsgen.runtime.upload.uploader import flush

__all__ = ["UploadRun", "flush"]

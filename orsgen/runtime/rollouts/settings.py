"""What every rollout of an adapter runs under (part of its ``AdapterConfig``)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from orsgen.runtime import images
from orsgen.runtime.trajectories.writer import TrajectorySink, sink_of
from orsgen.runtime.upload.record import UploadRun
from orsgen.runtime.upload.uploader import uploader


@dataclass(frozen=True)
class RolloutSettings:
    """What every rollout of an adapter runs under."""

    timeout: float  # seconds one tool call may take
    rollout_timeout: float | None = None  # seconds from the open session to the episode's end
    multimodal: bool = False  # images as TRL content lists (needs Pillow)
    unfinished_reward: float | None = None
    trajectories: TrajectorySink | None = None  # where settled rollouts' lines go
    upload: UploadRun | None = None  # the runs UI's run that settled rollouts go to
    # The adapter's name among several environments (a dict environment_factory's key,
    # trainer_facts.environment_name): its rollouts' ors/<env>/* metrics. None: one only.
    environment: str | None = None
    # The rollout deadline's clock (seconds, monotonic); injectable for tests and simulations.
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)

    @staticmethod
    def of(
        timeout: float,
        rollout_timeout: float | None,
        multimodal: bool,
        unfinished_reward: float | None,
        trajectories: str | os.PathLike[str] | TrajectorySink | None,
        clock: Callable[[], float] | None = None,
        upload: str | UploadRun | None = None,
    ) -> RolloutSettings:
        if multimodal:
            images.require_pillow()
        run = UploadRun.of(upload)
        if run is not None:
            uploader().warm()
        return RolloutSettings(
            timeout=float(timeout),
            rollout_timeout=rollout_timeout,
            multimodal=multimodal,
            unfinished_reward=None if unfinished_reward is None else float(unfinished_reward),
            trajectories=sink_of(trajectories),
            clock=time.monotonic if clock is None else clock,
            upload=run,
        )

"""A spawned child of the test process that chooses tasks as AsyncGRPO's rollout worker
does (no trainer, no server: a Chooser made through the process's streams), under the
hand-off the test named in ``ORSGEN_TASK_STATE``."""

from __future__ import annotations

from typing import Any

from orsgen.runtime.rollouts import handoff
from orsgen.runtime.rollouts.chooser import Chooser
from orsgen.runtime.rollouts.curriculum import PassRateCurriculum
from orsgen.runtime.rollouts.episode import Outcome
from orsgen.runtime.rollouts.streams import StreamKey, samplers

KEY = StreamKey("tests.Env", "http://127.0.0.1:9", "train")
TASKS = list(range(10))


def choose(resets: int, answer: Any) -> None:
    """Make the stream as the adapter does (join, make, say it was made), choose
    ``resets`` tasks, each scored 1.0, write the state at once, and put the stream's
    state right after it was made on ``answer``."""
    handoff.join()
    sampler, _ = samplers().get("stream", KEY, lambda: Chooser(TASKS, 0, 2, PassRateCurriculum()))
    handoff.made()
    answer.put(sampler.state_dict())
    for _ in range(resets):
        sampler.observe(sampler.choose(), Outcome(kind="scored", reward=1.0))
    handoff.flush()

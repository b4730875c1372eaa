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


def choose(resets: int, answer: Any, curriculum: bool = True) -> None:
    """Make the stream as the adapter does (join, make, say it was made), choose
    ``resets`` tasks, each scored 1.0, write the state at once, and put on ``answer`` the
    stream's state right after it was made, then the tasks chosen. ``curriculum``: a
    pass-rate curriculum, else the uniform passes."""
    handoff.join()
    sampler, _ = samplers().get(
        "stream", KEY, lambda: Chooser(TASKS, 0, 2, PassRateCurriculum() if curriculum else None)
    )
    handoff.made()
    answer.put(sampler.state_dict())
    chosen = []
    for _ in range(resets):
        chosen.append(sampler.choose())
        sampler.observe(chosen[-1], Outcome(kind="scored", reward=1.0))
    answer.put(chosen)
    handoff.flush()

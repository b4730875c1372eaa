"""A spawned child of the test process that chooses tasks as AsyncGRPO's rollout worker
does (no trainer, no server: a Chooser made through the process's streams), under the
hand-off the test named in ``ORSGEN_TASK_STATE``."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from orsgen.runtime.choosing import checkpoint
from orsgen.runtime.choosing.chooser import Chooser
from orsgen.runtime.choosing.curriculum import PassRateCurriculum
from orsgen.runtime.choosing.streams import StreamKey, samplers
from orsgen.runtime.records.episode import Outcome

KEY = StreamKey("tests.Env", "http://127.0.0.1:9", "train")
TASKS = list(range(10))


def choose(resets: int, answer: Any, curriculum: bool = True) -> None:
    """Make the stream as the adapter does (join, make, say it was made), choose
    ``resets`` tasks, each scored 1.0, write the state at once, and put on ``answer`` the
    stream's state right after it was made, then the tasks chosen. ``curriculum``: a
    pass-rate curriculum, else the uniform passes."""
    checkpoint.join()
    sampler, _ = samplers().get(
        "stream",
        KEY,
        lambda: Chooser(TASKS, 0, 2, curriculum=PassRateCurriculum() if curriculum else None),
    )
    checkpoint.made()
    answer.put(sampler.state_dict())
    chosen = []
    for _ in range(resets):
        chosen.append(sampler.choose())
        sampler.observe(chosen[-1], Outcome(kind="scored", reward=1.0))
    answer.put(chosen)
    checkpoint.flush()


class _Counted(Chooser):
    """A Chooser that counts its ``state_dict()`` calls (the writer's serialisations)."""

    calls = 0

    def state_dict(self) -> dict[str, Any]:
        _Counted.calls += 1
        return super().state_dict()


def idle(answer: Any, seconds: float) -> None:
    """Choose and observe as the adapter does (through ``tasks``), wait for the writer to
    write that, then idle ``seconds``, then choose once more: put on ``answer`` the
    serialisations while idle, then whether the writer wrote the new choice on its own
    (within 10 s). The writer's writes are seen as they land (its ``write`` wrapped), never
    waited for by sleeping."""
    from orsgen.runtime.choosing import tasks

    written: list[str] = []
    wrote = threading.Condition()
    write = checkpoint.write

    def seen_write(target: Path, text: str) -> None:
        write(target, text)
        with wrote:
            written.append(text)
            wrote.notify_all()

    checkpoint.write = seen_write  # the writer thread writes through it; it only observes
    checkpoint.join()
    sampler, _ = samplers().get(
        "stream", KEY, lambda: _Counted(TASKS, 0, 2, curriculum=PassRateCurriculum())
    )
    checkpoint.made()
    for _ in range(4):
        tasks.observe(sampler, tasks.choose(sampler), Outcome(kind="scored", reward=1.0))
    four = json.dumps(checkpoint.body(samplers().saved()), sort_keys=True)
    with wrote:
        assert wrote.wait_for(lambda: four in written, timeout=10)  # a period writes the four
        so_far = len(written)
    before = _Counted.calls
    time.sleep(seconds)  # the subject: the worker idles
    answer.put(_Counted.calls - before)
    tasks.choose(sampler)
    with wrote:
        answer.put(wrote.wait_for(lambda: len(written) > so_far, timeout=10))

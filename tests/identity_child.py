"""A rank started by ``torch.multiprocessing.spawn`` (tests/test_runtime_identity.py): it
joins a gloo process group with no launcher variable set, runs one rollout of the generated
coinenv package with ``trajectories=`` and the per-task table, and writes what the runtime
took it for."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
ANSWER = [{"role": "assistant", "content": "yes"}]


def rank_main(rank: int, url: str, out: str, port: int) -> None:
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):  # spawn sets none of them
        os.environ.pop(name, None)
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        sys.path.insert(0, str(ROOT / "bench"))
        from coinenv import CoinEnv, outcome_reward

        from orsgen.runtime.task_callback import TaskTableCallback
        from orsgen.runtime.trajectories import writer as trajectories
        from orsgen.runtime.transport.identity import identity

        env = CoinEnv(base_url=url, trajectories=str(Path(out) / "x.jsonl"))
        try:
            env.reset(task_index=rank)
            outcome_reward(
                [env], completions=[ANSWER], trainer_state=SimpleNamespace(global_step=0)
            )
        finally:
            env.close()
            trajectories.writers().close()
        TaskTableCallback().on_log(SimpleNamespace(output_dir=out), SimpleNamespace(), None)
        me = identity()
        (Path(out) / f"identity{rank}.json").write_text(
            json.dumps([me.rank, me.world_size, me.local_rank, me.source])
        )
        dist.barrier()
    finally:
        dist.destroy_process_group()

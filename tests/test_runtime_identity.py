"""One process identity (issue 29, item 2): ``identity()`` gives (rank, world size, local
rank) from torch.distributed when it is initialised, then the launcher's variables, and
every module reads it. Two ranks started by ``torch.multiprocessing.spawn`` (which sets no
``RANK``) write two trajectory files and two task tables; before, both wrote
``x.rank0.jsonl``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ors_server
from serve_model import free_port

from orsgen.runtime.transport import identity as identities

ROOT = Path(__file__).resolve().parents[1]
COIN_ENV = ROOT / "bench" / "coin_env.py"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_spawned_ranks_write_two_trajectory_files(
    ors_servers: ors_server.Servers, tmp_path: Path
) -> None:
    torch_mp = pytest.importorskip("torch.multiprocessing")
    from identity_child import rank_main

    server = ors_servers(COIN_ENV)
    torch_mp.spawn(rank_main, args=(server.url, str(tmp_path), free_port()), nprocs=2, join=True)
    files = sorted(p.name for p in tmp_path.glob("x*.jsonl"))
    assert files == ["x.rank0.jsonl", "x.rank1.jsonl"], files
    for rank in (0, 1):
        (line,) = (tmp_path / f"x.rank{rank}.jsonl").read_text().splitlines()
        assert json.loads(line)["task_index"] == rank
        seen = json.loads((tmp_path / f"identity{rank}.json").read_text())
        assert seen == [rank, 2, rank, "torch.distributed"]
    tables = sorted(p.name for p in tmp_path.glob("ors_tasks*.csv"))
    assert tables == ["ors_tasks.rank0.csv", "ors_tasks.rank1.csv"], tables


def test_the_launchers_variables_come_next(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert identities.identity() == identities.ProcessIdentity(0, 1, 0, "single process")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert identities.identity() == identities.ProcessIdentity(3, 4, 1, "launcher")
    monkeypatch.setenv("RANK", "three")
    with pytest.raises(ValueError, match="RANK='three' is not a whole number"):
        identities.identity()

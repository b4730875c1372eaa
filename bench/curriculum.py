"""Spend rollouts where they teach (issues 23, 26 and 29): uniform task choice, the pass-rate
curriculum and the curriculum seeded by an evaluation, at an equal rollout budget, on an
environment whose tasks succeed with known probabilities; and what one choice costs at
catalog scale.

    python bench/curriculum.py [--groups 200] [--group-size 4] [--batch-groups 2]
                               [--seed 0] [--coin-seed 0] [--prior-samples 8] [--out DIR]
    python bench/curriculum.py --scale [--out DIR]

It serves bench/coin_env.py (20 tasks: 7 always solved, 7 never, 6 half the time; the
environment draws each reward itself, so no model is needed) with the tests' instrumented
server (tests/serve_env.py) on 127.0.0.1, a fresh server per arm so every arm sees the
same draws. Each arm drives the GENERATED package (bench/coinenv) as GRPOTrainer does with
``train_dataset=None``: ``--batch-groups`` groups of ``--group-size`` adapter instances
reset with TRL's placeholder row (the adapter chooses the task), answer in plain text and
are scored by the generated ``outcome_reward`` (which submits the answer through the
terminal tool and settles the rollouts, feeding the curriculum), one group per call so
that the server's per-task draws reach the same groups on every run. Nothing is simulated.
The ``pass_rate+prior`` arm first evaluates the package with ``orsgen.eval.evaluate``
(``--prior-samples`` per task, on a server of its own) against an endpoint that answers
at once (tests/answer_model.py: the environment grades any answer by its coin), and gives
the run directory to ``PassRateCurriculum(prior=...)``.

Reported per arm: the share of zero-variance groups (all scored rollouts alike: no GRPO
advantage) over all groups and over the first 40, rollouts spent per informative group,
how often the least-seen task was chosen, and the mean of the ``ors/curriculum/*``
metrics the trainer's log would get. Writes ``DIR/curriculum.json`` and
``DIR/curriculum.md`` (default bench/results); both hold no timing, so a rerun leaves
them unchanged, and a file is written only when its text changed. Seconds per arm are
printed only.

``--scale`` measures the stream's sampler itself (a ``Chooser`` with a
``PassRateCurriculum``, as the adapter builds it, fed ``Outcome``s as the adapter's
rollouts settle, with ``ors/curriculum/*`` computed once per batch) at 100, 10,000 and
100,000 tasks: the cost per group while drawing (a prior covers every task, so there is
no first pass), during the first pass, and of the uniform chooser. Writes
``DIR/curriculum_scale.json`` and ``.md`` (timings: only this mode writes them).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "examples"), str(BENCH)]
for _k, _v in {"OPENREWARD_DISABLE_UPDATE_CHECK": "1", "OPENREWARD_LOG_LEVEL": "ERROR"}.items():
    os.environ.setdefault(_k, _v)

import ors_server  # noqa: E402  (tests/ors_server.py)

COIN_ENV = BENCH / "coin_env.py"
PLACEHOLDER = {"prompt": [{"role": "user", "content": ""}]}  # TRL's row with no dataset
TASK = re.compile(r"Task (\d+):")
FIRST = 40  # groups: the start of a run, where a prior should pay


def evaluation(url: str, samples: int, out: Path) -> Path:
    """An evaluation run of coinenv's train split in ``out``, for the prior."""
    from answer_model import AnswerModel
    from coinenv import CoinEnv

    from orsgen.eval import EvalConfig, evaluate

    with AnswerModel() as model:
        evaluate(
            CoinEnv,
            EvalConfig(endpoint=model.endpoint, model="answer", n=samples),
            adapter={"base_url": url},
            concurrency=4,
            out=out,
            progress=False,
        )
    return out


def run_arm(
    url: str, arm: str, groups: int, group_size: int, batch_groups: int, seed: int, prior: Any
) -> dict[str, Any]:
    """One arm: ``groups`` groups in batches, through the generated package."""
    from coinenv import CoinEnv, outcome_reward

    from orsgen.runtime.choosing import tasks
    from orsgen.runtime.choosing.curriculum import PassRateCurriculum

    tasks.samplers().clear()  # each arm starts its own stream
    curriculum: Any = arm if prior is None else PassRateCurriculum(prior=prior)
    width = group_size * batch_groups
    envs = [
        CoinEnv(base_url=url, group_size=group_size, seed=seed, curriculum=curriculum)
        for _ in range(width)
    ]
    chosen: list[int] = []
    group_rewards: list[list[float]] = []
    logged: dict[str, list[float]] = {}
    started = time.monotonic()
    try:
        for _batch in range(groups // batch_groups):
            prompts = [str(env.reset(**PLACEHOLDER)) for env in envs]
            found = [int(m.group(1)) for m in (TASK.search(p) for p in prompts) if m]
            assert len(found) == width, prompts
            for g in range(batch_groups):
                members = found[g * group_size : (g + 1) * group_size]
                assert len(set(members)) == 1, f"a group spans tasks {members}"
                chosen.append(members[0])
                rewards = outcome_reward(
                    envs[g * group_size : (g + 1) * group_size],
                    completions=[[{"role": "assistant", "content": "yes"}]] * group_size,
                    log_metric=lambda k, v: logged.setdefault(k, []).append(float(v)),
                )
                group_rewards.append([r for r in rewards if r is not None])
    finally:
        for env in envs:
            env.close()
    zero = [not rs or max(rs) == min(rs) for rs in group_rewards]
    informative = len(group_rewards) - sum(zero)
    counts = [chosen.count(t) for t in range(20)]
    return {
        "arm": arm if prior is None else f"{arm}+prior",
        "groups": len(group_rewards),
        "rollouts": len(group_rewards) * group_size,
        "unscored_rollouts": sum(group_size - len(rs) for rs in group_rewards),
        "zero_var_frac": round(sum(zero) / len(group_rewards), 4),
        f"zero_var_frac_first_{FIRST}": round(sum(zero[:FIRST]) / len(zero[:FIRST]), 4),
        "informative_groups": informative,
        "rollouts_per_informative_group": (
            round(len(group_rewards) * group_size / informative, 3) if informative else None
        ),
        "min_times_seen": min(counts),
        "times_seen": counts,
        "seconds": round(time.monotonic() - started, 2),
        "logged_means": {
            k: round(statistics.fmean(v), 4)
            for k, v in sorted(logged.items())
            if k.startswith("ors/curriculum/") or k == "ors/scored_frac"
        },
    }


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        f"| arm | groups | zero-variance share | first {FIRST} groups | "
        "rollouts / informative group | least-seen task |"
    )
    lines = [head, "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['arm']} | {r['groups']} | {r['zero_var_frac']:.3f} | "
            f"{r[f'zero_var_frac_first_{FIRST}']:.3f} | {r['rollouts_per_informative_group']} | "
            f"{r['min_times_seen']} |"
        )
    return "\n".join(lines)


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` unless it already holds exactly that (whether it wrote)."""
    if path.is_file() and path.read_text() == text:
        return False
    path.write_text(text)
    return True


def arms(args: argparse.Namespace) -> None:
    os.environ["COIN_SEED"] = str(args.coin_seed)  # the server subprocess inherits it
    rows, seconds = [], {}
    with tempfile.TemporaryDirectory() as scratch:
        server = ors_server.start(COIN_ENV)
        try:
            run_dir = evaluation(server.url, args.prior_samples, Path(scratch) / "eval")
        finally:
            server.stop()
        for arm, prior in (("uniform", None), ("pass_rate", None), ("pass_rate", run_dir)):
            server = ors_server.start(COIN_ENV)
            try:
                row = run_arm(
                    server.url,
                    arm,
                    args.groups,
                    args.group_size,
                    args.batch_groups,
                    args.seed,
                    prior,
                )
            finally:
                server.stop()
            seconds[row["arm"]] = row.pop("seconds")
            rows.append(row)
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "scale")}
    args.out.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"settings": settings, "arms": rows}, indent=2) + "\n"
    write_if_changed(args.out / "curriculum.json", text)
    md = f"# Curriculum benchmark\n\nSettings: `{json.dumps(settings)}`\n\n{table(rows)}\n"
    write_if_changed(args.out / "curriculum.md", md)
    print(table(rows))
    print("seconds per arm (not written):", seconds)
    for r in rows:
        print(r["arm"], "times seen per task:", r["times_seen"])
        print(r["arm"], "logged means:", r["logged_means"])


def stream(tasks_count: int, mode: str, group_size: int = 4) -> tuple[Any, Any, list[float]]:
    """The stream's sampler as the adapter builds it (a Chooser, with a curriculum unless
    ``mode`` is uniform), its curriculum and each task's chance of passing."""
    from orsgen.runtime.choosing.chooser import Chooser
    from orsgen.runtime.choosing.curriculum import PassRateCurriculum

    chance = [(1.0, 0.0, 0.5)[t % 3] for t in range(tasks_count)]
    made = None
    if mode == "drawing":  # a prior on every task: no first pass, draws from group 0
        made = PassRateCurriculum(prior=dict(enumerate(chance)))
    elif mode == "first pass":
        made = PassRateCurriculum()
    return Chooser(range(tasks_count), 0, group_size, curriculum=made), made, chance


def run_groups(chooser: Any, made: Any, chance: list[float], groups: int) -> None:
    """``groups`` groups in batches of 2, the logged figures computed once per batch."""
    from orsgen.runtime.choosing import curriculum as curricula
    from orsgen.runtime.records.episode import Outcome

    rng = random.Random(0)
    for _batch in range(groups // 2):
        chosen = [chooser.choose() for _ in range(2 * chooser.group_size)]
        for task in chosen:
            won = rng.random() < chance[task]
            chooser.observe(task, Outcome(1.0 if won else 0.0, "scored", None, True))
        curricula.report([made] if made is not None else [])


def cost_per_group(tasks_count: int, mode: str, groups: int) -> float:
    """Seconds per group of the stream's sampler (its start excluded: once per run)."""
    chooser, made, chance = stream(tasks_count, mode)
    started = time.perf_counter()
    run_groups(chooser, made, chance, groups)
    return (time.perf_counter() - started) / (groups // 2 * 2)


def calls_per_group(tasks_count: int, groups: int = 200) -> float:
    """Function calls per group while drawing (sys.setprofile): the work, free of timing
    noise."""
    counted = [0]

    def count(frame: object, event: str, arg: object) -> None:
        if event in ("call", "c_call"):
            counted[0] += 1

    chooser, made, chance = stream(tasks_count, "drawing")
    run_groups(chooser, made, chance, 2)  # first use out of the count
    sys.setprofile(count)
    try:
        run_groups(chooser, made, chance, groups)
    finally:
        sys.setprofile(None)
    return counted[0] / groups


def scale(args: argparse.Namespace) -> None:
    rows = []
    load_before = os.getloadavg()[0]  # the machine is shared: its load says what a timing is worth
    for count in (100, 10_000, 100_000):
        row: dict[str, Any] = {"tasks": count}
        for mode in ("drawing", "first pass", "uniform"):
            row[mode] = round(1000 * cost_per_group(count, mode, args.scale_groups), 4)
        row["calls per group, drawing"] = round(calls_per_group(count), 1)
        rows.append(row)
        print(row)
    load = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    lines = [
        "# Curriculum cost per group at catalog scale",
        "",
        f"`python bench/curriculum.py --scale` ({args.scale_groups} groups of 4 per cell, "
        f"ms per group, {platform.machine()} {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; 1-minute load average {load[0]} before, {load[1]} "
        "after). Goal: <= 1 ms per group at 100,000 tasks, flat.",
        "",
        "| tasks | curriculum, drawing | curriculum, first pass | uniform | calls per group, drawing |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['tasks']:,} | {r['drawing']} | {r['first pass']} | {r['uniform']} | "
            f"{r['calls per group, drawing']} |"
        )
    lines += [
        "",
        "Calls per group (Python and C function calls under sys.setprofile) say the work is",
        "flat whatever the timing noise of a shared machine. The stream's start (O(tasks),",
        "once per run: the seeded shuffle, the pools, the prior) is outside every figure.",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"groups": args.scale_groups, "group_size": 4, "unit": "ms per group", "load": load}
    (args.out / "curriculum_scale.json").write_text(
        json.dumps({"settings": meta, "rows": rows}, indent=2) + "\n"
    )
    (args.out / "curriculum_scale.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=200)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--batch-groups", type=int, default=2, help="groups per generation batch")
    p.add_argument("--seed", type=int, default=0, help="the adapters' task-choice seed")
    p.add_argument("--coin-seed", type=int, default=0, help="the environment's draws")
    p.add_argument("--prior-samples", type=int, default=8, help="samples per task of the prior")
    p.add_argument("--scale", action="store_true", help="measure the cost per group instead")
    p.add_argument("--scale-groups", type=int, default=2000, help="groups per --scale cell")
    p.add_argument("--out", type=Path, default=BENCH / "results")
    args = p.parse_args()
    if args.scale:
        scale(args)
    else:
        arms(args)


if __name__ == "__main__":
    main()

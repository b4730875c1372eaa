"""Fault injection into ``orsgen eval`` (issue 39 item 13): SIGKILL at many points of an
evaluation, of its resume and of a merge; SIGTERM and SIGINT with requests in flight; two
resumes at once; part of a group on disk. Real processes (tests/fault_runs.py), a real ORS
server, the scripted stand-in endpoint on loopback.

Each chain of faults starts from nothing: its first fault hits the run, each next one the
rerun a user types (the same command, with ``--resume`` for an evaluation; a merge refused
in one line naming ``--force`` is run again with it), and the rerun after the last fault
runs to its end. After every fault, the rows on disk are the uninterrupted run's, none
twice, and a group's rows are all on disk or none. At the end the run is the uninterrupted
one: every (task, sample) once, the same rows, as many as summary.json's ``rollouts``, the
same summary.json timing aside. After SIGTERM and SIGINT, run.json's endpoint counts are
what the endpoint received.

The chains run at once, on one ORS server per environment and one endpoint (each chain with
its own endpoint key, which the endpoint counts by and holds requests of). Every kill point
is a test id; a failure names it and what ``--out`` held when the signal was sent.
"""

from __future__ import annotations

import json
import random
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import openai_standin
import ors_server
from conftest import ECHO_ENV, ENVS, ROOT
from fault_runs import (
    N,
    SEED,
    Ready,
    Reference,
    Run,
    finish,
    held_in_flight,
    holder_named,
    listing,
    merge_args,
    one_line,
    partial_problems,
    final_problems,
    requests_counted,
    row_files,
    row_lines,
    shards_of,
    signal_when,
    whole_rows,
    written_since,
)

ECHO = ROOT / "generated" / "echo"  # examples/echo_env.py's test split: 4 tasks
SHARE_ENV = ENVS / "share_env.py"  # a group judge: 4 tasks
BIG_N = 400  # samples per task in the merged shards: 1,600 rows
KILL, TERM, INT = signal.SIGKILL, signal.SIGTERM, signal.SIGINT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


@dataclass(frozen=True)
class Fault:
    """A signal and when it is sent: ``("rows", K)``: once results.jsonl holds K lines;
    ``("said", TEXT)``: once stderr says it; ``("file", NAME)``: once --out holds it;
    ``("after", S)``: S seconds after the start; ``("bytes", F)``: once the merge has written
    F of results.jsonl's size into --out (whatever the file's name); ``("held", K)``: K lines, then every worker's
    request held at the endpoint. ``craft`` is what a kill on main would leave, written into
    --out first: ``torn`` (half a row), ``group`` (a group's first row), ``group+torn`` (its
    first two rows and half the third)."""

    name: str
    sig: signal.Signals
    when: tuple[str, Any]
    craft: str | None = None


@dataclass(frozen=True)
class Chain:
    name: str
    kind: str  # plain (echo), group (share_env), merge (large shards of the plain run)
    faults: tuple[Fault, ...]
    concurrency: int = 2
    two: bool = False  # the last rerun is two resumes at once

    def points(self) -> list[str]:
        last = [f"{self.name}: two resumes at once"] if self.two else []
        return [f"{self.name}: {f.name}" for f in self.faults] + last


_fractions = random.Random(SEED)  # where in a merge's rows a kill lands: fixed, recorded
F = [round(_fractions.uniform(0.05, 0.95), 2) for _ in range(4)]

CHAINS = (
    Chain(
        "start",
        "plain",
        (
            Fault("eval SIGKILL 0.5 s after its start, before run.json", KILL, ("after", 0.5)),
            Fault("resume SIGKILL once run.json is written", KILL, ("file", "run.json")),
            Fault("resume SIGKILL after row 5", KILL, ("rows", 5)),
        ),
    ),
    Chain(
        "one-worker",
        "plain",
        (
            Fault("eval SIGKILL after row 1", KILL, ("rows", 1)),
            Fault("resume SIGKILL once it says resuming", KILL, ("said", "resuming")),
            Fault("torn row, resume SIGKILL after row 8", KILL, ("rows", 8), craft="torn"),
        ),
        concurrency=1,
    ),
    Chain(
        "four-workers",
        "plain",
        (
            Fault("eval SIGKILL after row 2", KILL, ("rows", 2)),
            Fault("resume SIGKILL after row 6", KILL, ("rows", 6)),
            Fault("resume SIGKILL after row 10", KILL, ("rows", 10)),
        ),
        concurrency=4,
        two=True,
    ),
    Chain(
        "group",
        "group",
        (
            Fault("eval SIGKILL after row 3", KILL, ("rows", 3)),
            Fault(
                "one row of a group, resume SIGKILL once it says resuming",
                KILL,
                ("said", "resuming"),
                craft="group",
            ),
            Fault(
                "two rows of a group and a torn third, resume SIGKILL after row 9",
                KILL,
                ("rows", 9),
                craft="group+torn",
            ),
        ),
    ),
    Chain(
        "preempted",
        "plain",
        (
            Fault("eval SIGTERM after row 3, two requests in flight", TERM, ("held", 3)),
            Fault("resume SIGINT after row 7, two requests in flight", INT, ("held", 7)),
        ),
    ),
    Chain(
        "merge-a",
        "merge",
        (Fault("merge SIGKILL once run.json is in --out", KILL, ("file", "run.json")),),
    ),
    Chain(
        "merge-b",
        "merge",
        (
            Fault(f"merge SIGKILL at {F[0]:.0%} of its rows", KILL, ("bytes", F[0])),
            Fault(f"rerun SIGKILL at {F[1]:.0%} of its rows", KILL, ("bytes", F[1])),
        ),
    ),
    Chain(
        "merge-c",
        "merge",
        (Fault(f"merge SIGKILL at {F[2]:.0%} of its rows", KILL, ("bytes", F[2])),),
    ),
    Chain(
        "merge-d",
        "merge",
        (Fault(f"merge SIGKILL at {F[3]:.0%} of its rows", KILL, ("bytes", F[3])),),
    ),
    Chain(
        "merge-e",
        "merge",
        (Fault("merge SIGKILL once results.jsonl is in --out", KILL, ("file", "results.jsonl")),),
    ),
    Chain(
        "merge-f",
        "merge",
        (Fault("merge SIGKILL once summary.json is in --out", KILL, ("file", "summary.json")),),
    ),
)
POINTS = [point for chain in CHAINS for point in chain.points()]


@dataclass
class Point:
    """What happened at one kill point: what --out held when the signal went, and what is
    wrong (nothing, when the test passes)."""

    at: str = "not reached"
    problems: list[str] = field(default_factory=list)


@dataclass
class Setting:
    root: Path
    standin: openai_standin.Standin
    urls: dict[str, str]  # plain, group: the ORS server's URL
    packages: dict[str, Path]
    refs: dict[str, Reference] = field(default_factory=dict)
    shards: list[Path] = field(default_factory=list)

    def eval_args(self, kind: str, out: Path, key: str, concurrency: int) -> list[str]:
        return [
            str(self.packages[kind]),
            "--endpoint",
            self.standin.endpoint,
            "--model",
            self.standin.model,
            "--endpoint-api-key",
            key,
            "--base-url",
            self.urls[kind],
            "--no-progress",
            "--split",
            "test",
            "-n",
            str(N),
            "--seed",
            str(SEED),
            "--concurrency",
            str(concurrency),
            "--out",
            str(out),
        ]


def _craft(how: str, out: Path, ref: Reference, crafted: set[int]) -> str:
    """Write into ``out``'s results.jsonl what a kill on main leaves (see :class:`Fault`);
    the group's task is added to ``crafted``."""
    have = {(r["task_index"], r["sample"]) for r in whole_rows(out / "results.jsonl")}
    rows = ref.rows
    missing = sorted(set(rows) - have)
    absent = sorted({t for t, _ in rows} - {t for t, _ in have})  # tasks with no row on disk
    if not (missing if how == "torn" else absent):
        return f"nothing to craft ({how}): no row or group missing; "
    if how == "torn":
        text = json.dumps(rows[missing[0]], sort_keys=True)
        written = text[: len(text) // 2]
    else:
        task = absent[0]
        crafted.add(task)
        group = [json.dumps(rows[(task, s)], sort_keys=True) + "\n" for s in range(N)]
        written = group[0] if how == "group" else group[0] + group[1] + group[2][:40]
    with (out / "results.jsonl").open("a") as fh:
        fh.write(written)
    return f"{how} written ({len(written)} bytes); "


def _ready(fault: Fault, run: Run, out: Path, setting: Setting, key: str, chain: Chain) -> Ready:
    kind, value = fault.when
    if kind == "rows":
        return lambda: row_lines(out) >= value
    if kind == "said":
        return lambda: value in run.said()
    if kind == "file":
        return lambda: (out / value).exists()
    if kind == "after":
        return lambda: time.monotonic() - run.started >= value
    if kind == "bytes":
        size = (setting.refs["merged"].out / "results.jsonl").stat().st_size
        before = row_files(out)
        return lambda: written_since(out, before) >= value * size
    assert kind == "held", kind
    return held_in_flight(setting.standin, key, lambda: row_lines(out) >= value, chain.concurrency)


def _run_chain(chain: Chain, setting: Setting) -> dict[str, Point]:
    """Every fault of ``chain`` in turn, then the rerun to its end; each kill point's record."""
    where = setting.root / chain.name
    out, key = where / "out", chain.name
    ref = setting.refs["merged" if chain.kind == "merge" else chain.kind]
    points = {name: Point() for name in chain.points()}
    crafted: set[int] = set()
    for i, (fault, name) in enumerate(zip(chain.faults, chain.points())):
        point = points[name]
        done = _craft(fault.craft, out, ref, crafted) if fault.craft else ""
        if chain.kind == "merge":
            args = merge_args(setting.shards, out)
        else:
            args = setting.eval_args(chain.kind, out, key, chain.concurrency)
            args += ["--resume"] if i else []
        run = Run(args, where / f"step-{i}")
        ready = _ready(fault, run, out, setting, key, chain)
        why = signal_when(run, ready, fault.sig)
        if why is not None and fault.when[0] == "file" and ready() and run.process.returncode == 0:
            # It wrote the file and ended before the signal: a kill after its last write.
            why, done = None, f"{done}ended before the signal; "
        point.at = f"{done}{row_lines(out)} lines in results.jsonl; {listing(out)}"
        finished = (out / "summary.json").is_file()
        if fault.when[0] == "held":
            setting.standin.release(key)
        if why is not None:
            point.problems.append(why)
        if done.startswith("nothing to craft"):
            point.problems.append(f"the fault was not set up: {done}")
        if chain.kind != "merge":
            groups = crafted if chain.kind == "group" else None
            point.problems += partial_problems(out, ref, groups=groups)
        if fault.sig != KILL:
            point.problems += _counts(setting, out, key)
    if chain.kind == "merge":
        last = _merge_again(setting, out, where, finished)
    else:
        last = _resume_again(chain, setting, out, where, key)
    last += final_problems(out, ref, config=chain.kind == "merge")
    if all(fault.sig != KILL for fault in chain.faults):  # no count was lost
        last += _counts(setting, out, key)
    for point in points.values():
        point.problems += [f"then: {p}" for p in last]
    return points


def _counts(setting: Setting, out: Path, key: str) -> list[str]:
    """run.json's endpoint requests against those the endpoint received with ``key``."""
    counted, received = requests_counted(out), setting.standin.received(key)
    if counted == received:
        return []
    return [f"run.json counts {counted} endpoint requests; the endpoint received {received}"]


def _resume_again(chain: Chain, setting: Setting, out: Path, where: Path, key: str) -> list[str]:
    """The last rerun: one resume, or two at once (each with one worker, held at the
    endpoint until both are in their rollouts or one has ended)."""
    if not chain.two:
        args = setting.eval_args(chain.kind, out, key, chain.concurrency) + ["--resume"]
        code, printed, said = finish(Run(args, where / "last"))
        return [] if code == 0 else [f"the resume failed: exit {code}: {said[-800:]}"]
    setting.standin.hold(key)
    args = setting.eval_args(chain.kind, out, key, 1) + ["--resume"]
    runs = [Run(args, where / "last-a"), Run(args, where / "last-b")]
    _wait_for(runs, lambda: setting.standin.waiting(key) >= 2)
    setting.standin.release(key)
    problems = []
    ends = [finish(r) for r in runs]
    for (code, printed, said), run, other in zip(ends, runs, runs[::-1]):
        refused = one_line(code, printed, said)
        if code != 0 and (refused is not None or not holder_named(said, other.pid)):
            problems.append(
                f"a resume neither ran nor was refused in one line naming pid {other.pid} and "
                f"this host: exit {code}, stderr {said[-600:]!r}"
            )
    if all(code != 0 for code, _, _ in ends):
        problems.append("neither resume finished the run")
    return problems


def _wait_for(runs: list[Run], ready: Ready, limit: float = 240) -> None:
    """Until ``ready()`` or one of ``runs`` has ended."""
    deadline = time.monotonic() + limit
    while not ready() and all(r.process.poll() is None for r in runs):
        if time.monotonic() > deadline:
            return
        time.sleep(0.01)


def _merge_again(setting: Setting, out: Path, where: Path, finished: bool) -> list[str]:
    """The merge run again: the same command; when that is refused in one line naming
    --force, with --force. A merge killed once it had written summary.json (``finished``)
    says that it had finished."""
    code, printed, said = finish(Run(merge_args(setting.shards, out), where / "last"))
    if finished and "finished" not in said + printed:
        return [f"the merge run again did not say the merge had finished: {said!r}"]
    if code == 2 and one_line(code, printed, said, "--force") is None:
        forced = Run(merge_args(setting.shards, out, "--force"), where / "forced")
        code, printed, said = finish(forced)
    if code != 0:
        return [f"the merge run again failed: exit {code}: {said[-800:]}"]
    return []


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai_standin.Standin]:
    logs = tmp_path_factory.mktemp("faults-standin")
    # 50 ms a request: rows come one every few tens of milliseconds, each kill point in reach.
    server = openai_standin.start(logs, tool="echo", argument="text", quote=3, delay=0.05)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def share_server(ors_servers: ors_server.Servers) -> ors_server.RunningServer:
    return ors_servers(SHARE_ENV)


@pytest.fixture(scope="module")
def killed_echo_server(ors_servers: ors_server.Servers) -> Iterator[ors_server.RunningServer]:
    """An echo server of this file's own: a killed run leaves its sessions open there (the
    server reaps them later), never on the shared one other tests count sessions on."""
    server = ors_servers.own(ECHO_ENV)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def share_pkg(
    share_server: ors_server.RunningServer, generate_package: Callable[..., ModuleType]
) -> Path:
    return Path(
        generate_package("share_faults", share_server.url, class_name="ShareEnv").__file__
    ).parent


@pytest.fixture(scope="module")
def setting(
    standin: openai_standin.Standin,
    killed_echo_server: ors_server.RunningServer,
    share_server: ors_server.RunningServer,
    share_pkg: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Setting:
    """The uninterrupted runs (each environment's, and the large shards merged)."""
    root = tmp_path_factory.mktemp("faults")
    setting = Setting(
        root,
        standin,
        {"plain": killed_echo_server.url, "group": share_server.url},
        {"plain": ECHO, "group": share_pkg},
    )
    with ThreadPoolExecutor(max_workers=2) as pool:
        refs = {
            kind: pool.submit(
                finish,
                Run(setting.eval_args(kind, root / f"ref-{kind}", f"ref-{kind}", 2), root / kind),
            )
            for kind in ("plain", "group")
        }
        for kind, done in refs.items():
            code, printed, said = done.result()
            assert code == 0, said
            setting.refs[kind] = Reference(root / f"ref-{kind}")
    setting.shards = shards_of(setting.refs["plain"], root / "shards", 3, BIG_N)
    merged = Run(merge_args(setting.shards, root / "ref-merged"), root / "merged")
    code, printed, said = finish(merged)
    assert code == 0, said
    setting.refs["merged"] = Reference(root / "ref-merged")
    return setting


@pytest.fixture(scope="module")
def outcome(setting: Setting) -> dict[str, Point]:
    """Every chain run, at once; each kill point's record (also in kill-points.json)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(_run_chain, chain, setting) for chain in CHAINS]
        points = {name: point for f in futures for name, point in f.result().items()}
    (setting.root / "kill-points.json").write_text(
        json.dumps({name: vars(point) for name, point in points.items()}, indent=2)
    )
    return points


def test_the_faults_are_many_and_the_runs_worth_faulting(setting: Setting) -> None:
    """At least 20 kill points, and uninterrupted runs whose rows differ: the echo run mixes
    passes and failures, the group judge gives each of n samples 1/n."""
    assert len(POINTS) == len(set(POINTS)) >= 20
    assert 0 < setting.refs["plain"].summary["pass_at_k"]["1"] < 1
    assert {r["reward"] for r in setting.refs["group"].rows.values()} == {1 / N}
    assert setting.refs["merged"].summary["rollouts"] == 4 * BIG_N


@pytest.mark.parametrize("point", POINTS)
def test_a_faulted_run_ends_as_the_uninterrupted_one(point: str, outcome: dict[str, Point]) -> None:
    """The kill point's run, and every rerun after it, as the module's docstring says."""
    record = outcome[point]
    assert not record.problems, f"{point} (at the signal: {record.at}): " + "; ".join(
        record.problems
    )

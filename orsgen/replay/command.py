"""``orsgen replay RUN --out OUT [options]``: the command line over
:func:`orsgen.replay.replay`.

Exit codes: 0 when every recorded rollout is reproduced by a replay (its reward, each call's
reward within ``--tolerance``, where it finished, no call refused); 1 when one is not (a CI
gate); 2 for a usage error (one line); 128 + the signal when interrupted."""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orsgen.arguments import Failed, Parser, UsageError, at_least, in_range, run_directory
from orsgen.eval.command import adapter_config, load_adapter
from orsgen.eval.options import environment_options
from orsgen.eval.config import adapter_identity
from orsgen.eval.endpoints import public_url
from orsgen.jsonobject import as_array
from orsgen.recorded_package import recorded
from orsgen.replay.run import Recording, load, replay
from orsgen.wording import plural


def parser() -> Parser:
    p = Parser(
        prog="orsgen replay",
        description="Replay a recorded evaluation run (or a training run's trajectories) "
        "against the environment: for every "
        "recorded rollout, a session on the same task and the recorded tool calls in order, "
        "through the generated package (no model). Writes a run directory that says which "
        "rewards changed, which rollouts flipped, which calls the environment now refuses.",
    )
    p.add_argument(
        "run",
        metavar="RUN",
        help="an `orsgen eval --out` directory, or a training trajectory file or directory",
    )
    p.add_argument("--out", required=True, help="the replay's run directory (a new one)")
    p.add_argument(
        "--package", metavar="DIR", help="the generated package (default: the one run.json names)"
    )
    environment_options(p)
    p.add_argument(
        "--concurrency", type=at_least(1), default=1, help="rollouts at once (default 1)"
    )
    p.add_argument(
        "--repeat",
        type=at_least(1),
        default=1,
        metavar="K",
        help="replay each rollout K times: one whose replays disagree is nondeterministic, "
        "neither a change nor a flip (default 1)",
    )
    p.add_argument(
        "--tolerance",
        type=in_range(0.0),
        default=0.0,
        help="a reward changed when it moved more than this (default 0)",
    )
    return p


def _facts(args: Any, recording: Recording, klass: type, out: Path) -> dict[str, Any]:
    """The replay's run.json: what was replayed, where and how (no key, no secret)."""
    config, ours = recording.config, adapter_identity(klass)
    # A trajectory names its adapter class alone (the class replayed), not these two.
    if config.get("environment", ours["environment"]) != ours["environment"]:
        raise UsageError(
            f"{recording.package} is a package of {ours['environment']!r}; the run is of "
            f"{config.get('environment')!r}"
        )
    if config.get("tools_sha256", ours["tools_sha256"]) != ours["tools_sha256"]:
        print(
            f"orsgen replay: note: {recording.package}'s tools differ from the run's; the "
            "recorded calls are sent as recorded",
            file=sys.stderr,
        )
    keep = ("model", "split", "pass_threshold", "unfinished_reward", "rollout_timeout")
    urls = [public_url(str(u)) for u in as_array(args.base_url)]
    return {
        "kind": "replay",
        # Relative to the replay's directory: no absolute path of this machine is written.
        "recorded_run": os.path.relpath(recording.run.path.resolve(), out.resolve()),
        **recorded(recording.package, out),
        **{k: config.get(k) for k in (*keep, "adapter_version")},
        "environment": ours["environment"],
        "adapter": ours["adapter"],
        "tools_sha256": ours["tools_sha256"],
        "base_url": urls[0] if len(urls) == 1 else urls or None,
        "repeat": args.repeat,
        "tolerance": args.tolerance,
    }


def main(argv: Sequence[str]) -> int:
    args = parser().parse(list(argv))
    out = run_directory(args.out, "--out")
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        return _replay(args, out)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (a preemption, an eviction)
        print(
            f"orsgen replay: interrupted; summary.json covers the rollouts replayed so far: "
            f"the same command continues the replay in {out}",
            file=sys.stderr,
            flush=True,
        )
        signum = next((a for a in exc.args if isinstance(a, int)), signal.SIGINT)
        os._exit(128 + signum)  # the abandoned replays' threads are not waited for
    finally:
        signal.signal(signal.SIGTERM, previous)


def _terminated(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(signum)


def _replay(args: Any, out: Path) -> int:
    recording = load(args.run, args.package)
    klass = load_adapter(str(recording.package), args.env_class or recording.config.get("adapter"))
    # The recorded run's own settings (its rollout deadline), not this command's defaults.
    deadline = recording.config.get("rollout_timeout")
    adapter = adapter_config(args, klass, str(recording.package), rollout_timeout=deadline)
    facts = _facts(args, recording, klass, out)
    if getattr(klass, "SUPPORTS_SCORE_GROUP", False):
        raise UsageError(f"{facts['environment']} judges groups (score_group): not replayed")
    count = len(recording.rows)
    print(f"replaying {plural(count, 'rollout')} of {args.run} x {args.repeat}", file=sys.stderr)
    make = functools.partial(klass, config=adapter)
    s = replay(make, recording, out, facts, args.concurrency)
    flips = s["flips"]
    print(
        f"{s['replayed']} rollouts replayed in {s['seconds']:.1f} s: {s['rewards_changed']} "
        f"rewards changed ({len(flips['pass_to_fail'])} pass to fail, "
        f"{len(flips['fail_to_pass'])} fail to pass), {len(s['call_rewards_changed'])} call "
        f"rewards changed, {len(s['finished_elsewhere'])} finished "
        f"at another call, {s['outputs_changed']} outputs changed, {len(s['refused'])} calls "
        f"refused, {len(s['nondeterministic'])} nondeterministic"
    )
    print(f"results in {out}: results.jsonl, summary.json, report.md", file=sys.stderr)
    if s["changed"]:
        raise Failed(f"the environment's behaviour changed; see {Path(out) / 'report.md'}")
    return 0

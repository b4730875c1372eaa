"""Evaluate models on the echo environment through a real OpenAI-compatible server, and
compare them: the "did training help?" step of the demo.

    python examples/eval_demo.py --url http://127.0.0.1:8080 \\
        --before WORKDIR/tiny-model --after WORKDIR/grpo [--split test] [-n 4] [--out DIR]

Each model directory is served in turn with ``transformers serve`` on 127.0.0.1 (a free
port, stopped by PID), evaluated with ``orsgen eval``'s Python API on ``--split`` of the
echo server at ``--url`` through the generated package generated/echo, and the two runs are
compared as ``orsgen eval --compare`` does. With only ``--before``, one run is evaluated
and summarised. Runs are written to ``--out``/before and ``--out``/after.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "examples")]
for _k, _v in {
    "OPENREWARD_DISABLE_UPDATE_CHECK": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}.items():
    os.environ.setdefault(_k, _v)

from serve_model import start_model_server  # noqa: E402

from generated.echo import EchoEnv  # noqa: E402
from orsgen.eval import compare, evaluate, format_comparison  # noqa: E402
from orsgen.eval.command import count_tasks  # noqa: E402


def evaluate_model(model_dir: Path, url: str, split: str, n: int, out: Path) -> dict[str, object]:
    """Serve ``model_dir``, evaluate it on ``split``, stop the server; the run's summary."""
    server = start_model_server(model_dir, out.parent)
    try:
        result = evaluate(
            EchoEnv,
            endpoint=server.endpoint,
            model=server.model,
            split=split,
            samples=n,
            task_count=count_tasks(EchoEnv, url, None, split),
            out=out,
            base_url=url,
            progress=False,
        )
    finally:
        server.stop()
    s = result.summary
    print(
        f"{out.name}: {s['rollouts']} rollouts on split {split!r}, coverage "
        f"{s['coverage']:.3f}, mean reward {s['mean_reward']}, pass@1 {s['pass_at_k']['1']:.3f}"
    )
    return s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True, help="the echo ORS server")
    parser.add_argument("--before", required=True, type=Path, help="model directory")
    parser.add_argument("--after", type=Path, help="model directory after training")
    parser.add_argument("--split", default="test")
    parser.add_argument("-n", "--samples", type=int, default=4)
    parser.add_argument("--out", type=Path)
    opts = parser.parse_args()
    out = opts.out or Path(tempfile.mkdtemp(prefix="orsgen-eval-"))
    out.mkdir(parents=True, exist_ok=True)
    before = evaluate_model(opts.before, opts.url, opts.split, opts.samples, out / "before")
    if opts.after is None:
        print(json.dumps(before["pass_at_k"]))
        return
    after = evaluate_model(opts.after, opts.url, opts.split, opts.samples, out / "after")
    print(format_comparison(compare(before, after)))
    print(f"runs: {out}/before, {out}/after (report.md in each)")


if __name__ == "__main__":
    main()

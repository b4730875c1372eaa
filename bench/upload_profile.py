"""Where the upload's CPU goes, per rollout (issue 27): an uploader in this process
(orsgen/runtime/upload/uploader.py, with the SDK's real upload client) is handed N
settled rollouts shaped like bench/upload.py's (8 messages of 512 bytes: a prompt, three
tool calls with their results, a last answer) and uploads them to the stand-in platform API
(tests/platform_api.py, a subprocess). What is measured is this process's CPU seconds
(every thread: the uploader's and the SDK's batching thread) from the first submit to the
end of the flush, per rollout, after a warm-up; and, with ``--profile``, a cProfile of
each of those threads. The rollouts are handed over ``--rate`` a second (as they settle in
bench/upload.py's runs), or all at once.

    python bench/upload_profile.py [--rollouts 600] [--rate 40] [--profile] [--environment NAME]

``--environment owner/name`` is a catalog name (the SDK then looks the environment up
before each start); the default is a bare name, as bench/upload.py's runs have.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
KEY = "or-bench-profile-key"
SIZE = 512


def _record(api_url: str, number: int, environment: str) -> Any:
    from orsgen.runtime.upload.record import Record, UploadRun

    text = "x" * SIZE
    messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
    for call in range(3):
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": f"c{call}", "function": {"name": "draw", "arguments": '{"n": 1}'}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{call}", "content": text})
    messages.append({"role": "assistant", "content": text})
    return Record(
        run=UploadRun("bench-profile", model_name="standin"),
        environment=environment,
        split="test",
        task_index=number % 60,
        task_spec={"index": number % 60},
        messages=messages,
        reward=1.0,
        finished=True,
        metadata={"verdict": "scored", "reason": None, "source": "orsgen"},
        step=None,
        duration_ms=20,
        api_key=KEY,
        api_url=api_url,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--environment", default="lotteryenv")
    parser.add_argument(
        "--rate",
        type=float,
        default=40.0,
        help="rollouts settling per second (bench/upload.py's runs: about 37); 0: all at once",
    )
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=30)
    opts = parser.parse_args()
    os.environ["OPENREWARD_DISABLE_UPDATE_CHECK"] = "1"
    os.environ.setdefault("OPENREWARD_LOG_LEVEL", "ERROR")

    from orsgen.runtime.upload.uploader import Uploader
    from platform_api import PlatformAPI

    profiles: dict[str, cProfile.Profile] = {}
    if opts.profile:

        def _enable(frame: Any, event: str, arg: Any) -> None:
            del frame, event, arg
            sys.setprofile(None)
            profile = profiles.setdefault(threading.current_thread().name, cProfile.Profile())
            profile.enable()

        threading.setprofile(_enable)  # every thread started from here is profiled
    api = PlatformAPI(Path(tempfile.mkdtemp(prefix="orsgen-upload-profile-")))
    try:
        up = Uploader()
        up.warm()
        for number in range(opts.warmup):
            up.submit(_record(api.url, number, opts.environment))
        up._queue.join()  # pyright: ignore[reportPrivateUsage] - the bench waits for the thread
        time.sleep(1.5)  # the SDK's batches of the warm-up go out (1 s maximum age)
        records = [_record(api.url, n, opts.environment) for n in range(opts.rollouts)]
        cpu, wall = time.process_time(), time.monotonic()
        for record in records:
            up.submit(record)
            if opts.rate:
                time.sleep(1 / opts.rate)
        up._queue.join()  # pyright: ignore[reportPrivateUsage]
        queued_cpu = time.process_time() - cpu
        assert up.flush(60)
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        threading.setprofile(None)  # type: ignore[arg-type]
        for profile in profiles.values():
            profile.disable()
        time.sleep(0.5)
        arrived = [r for r in api.rollouts().values() if r["messages"]]
        requests = api.requests()
    finally:
        api.stop()
    starts = sum(
        1 for r in requests if r["path"] == "/v1/rollouts" and '"rollout"' in r["body"][:400]
    )
    result = {
        "rollouts": opts.rollouts,
        "environment": opts.environment,
        "rate_per_s": opts.rate,
        "cpu_ms_per_rollout": round(1000 * cpu / opts.rollouts, 3),
        "cpu_ms_per_rollout_until_queue_empty": round(1000 * queued_cpu / opts.rollouts, 3),
        "wall_s": round(wall, 3),
        "uploaded": up.uploaded,
        "arrived_with_messages": len(arrived) - min(len(arrived), opts.warmup),
        "requests": len(requests),
        "start_requests": starts,
        "environment_lookups": sum(1 for r in requests if r["method"] == "GET"),
        "load_1m": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result), flush=True)
    for name, profile in sorted(profiles.items()):
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out)
        total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
        print(f"\n=== thread {name}: {total:.3f} s in functions (tottime sum)")
        stats.sort_stats("tottime").print_stats(opts.top)
        stats.sort_stats("cumulative").print_stats(opts.top)
        print(out.getvalue())


if __name__ == "__main__":
    main()

"""``orsgen eval``'s parser, and the environment's options that ``orsgen replay`` takes too."""

from __future__ import annotations

import argparse

from orsgen.arguments import Parser, at_least, http_url, in_range, number, price, rollout_options
from orsgen.arguments import environment_options as _environment_options
from orsgen.arguments import seconds
from orsgen.eval.config import DEFAULT_MAX_TURNS, DEFAULT_REQUEST_ATTEMPTS
from orsgen.eval.config import DEFAULT_REQUEST_TIMEOUT, EvalConfigError
from orsgen.eval.config import parse_shard
from orsgen.eval.endpoints import DEFAULT_DOWN_LIMIT


def _indices(text: str) -> list[int]:
    try:
        found = [int(i) for i in text.split(",") if i.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes comma-separated integers, got {text!r}") from None
    if not found:
        raise argparse.ArgumentTypeError("names no task")
    return found


def _shard(text: str) -> tuple[int, int]:
    try:
        return parse_shard(text)
    except EvalConfigError as exc:
        raise argparse.ArgumentTypeError(exc.problem) from None


def parser() -> Parser:
    p = Parser(
        prog="orsgen eval",
        description="Evaluate a model behind an OpenAI-compatible endpoint on an environment, "
        "through a generated adapter package. Nothing is written without --out; with it, the "
        "run's files go there and the command ends by saying where.",
        epilog="orsgen eval --compare RUN... and orsgen eval --merge SHARD... are aliases of "
        "orsgen compare RUN... and orsgen merge SHARD...",
    )
    p.add_argument("dir", metavar="DIR", help="the generated package directory")
    p.add_argument(
        "--endpoint",
        type=http_url,
        action="append",
        required=True,
        help="base URL of the OpenAI-compatible API (…/v1); repeat for several serving the "
        "same model: each request goes to the one with the fewest in flight",
    )
    p.add_argument("--model", required=True, help="model name as the endpoint knows it")
    p.add_argument(
        "--endpoint-api-key",
        action="append",
        help="the endpoint's key (default: OPENAI_API_KEY); once for every endpoint, or once "
        "per --endpoint in the same order; never written",
    )
    p.add_argument(
        "--endpoint-down-limit",
        type=seconds,
        default=DEFAULT_DOWN_LIMIT,
        metavar="SECONDS",
        help="stop the run (exit 1, rows kept for --resume) once every endpoint has been down "
        f"this long (default {DEFAULT_DOWN_LIMIT:g})",
    )
    environment_options(p)
    p.add_argument("--split", help="split to evaluate (default: the package's default split)")
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--num-tasks", type=at_least(1), help="the first N tasks of the split (default: all)"
    )
    group.add_argument(
        "--indices",
        dest="task_indices",
        metavar="INDICES",
        type=_indices,
        help="task indices, comma-separated (0,3,7)",
    )
    p.add_argument("--shard", type=_shard, metavar="I/N", help="run shard I of N (I from 0)")
    p.add_argument(
        "-n",
        "--samples",
        dest="n",
        metavar="SAMPLES",
        type=at_least(1),
        default=1,
        help="samples per task (default 1)",
    )
    rollout_options(p, 1, "rollouts", package=True)
    p.add_argument(
        "--max-turns",
        type=at_least(1),
        default=DEFAULT_MAX_TURNS,
        help=f"assistant turns per rollout (default {DEFAULT_MAX_TURNS})",
    )
    p.add_argument(
        "--rollout-timeout",
        type=seconds,
        help="seconds per rollout from its reset (default: no limit); also each chat "
        "request's budget",
    )
    p.add_argument(
        "--request-attempts",
        type=at_least(1),
        default=DEFAULT_REQUEST_ATTEMPTS,
        metavar="N",
        help="a chat request's budget: after N tries that its endpoints fail (an outage "
        "aside; with --rollout-timeout, N server errors or timeouts, else the deadline), its "
        "rollout is failed, naming the last answer, and the run goes on (default "
        f"{DEFAULT_REQUEST_ATTEMPTS}); each try is one request the endpoint receives",
    )
    p.add_argument(
        "--request-timeout",
        type=seconds,
        default=DEFAULT_REQUEST_TIMEOUT,
        metavar="SECONDS",
        help="seconds a chat request's try may wait for its answer: a request takes at most "
        f"N x this, N of --request-attempts (default {DEFAULT_REQUEST_TIMEOUT:g})",
    )
    p.add_argument(
        "--temperature",
        type=in_range(0.0),
        help="sampling temperature sent with each request (default: the endpoint's own)",
    )
    p.add_argument(
        "--max-tokens",
        type=at_least(1),
        help="most tokens per assistant turn (default: the endpoint's own limit)",
    )
    p.add_argument(
        "--max-rollout-tokens",
        type=at_least(1),
        metavar="N",
        help="end a rollout once its tokens so far (prompt plus completion, as the endpoint "
        "reports them) pass N, checked after each turn (stop: token_limit; default: no limit)",
    )
    p.add_argument(
        "--price",
        type=price,
        metavar="IN,OUT",
        help="price per million prompt and completion tokens: each row gets its cost "
        "(default: none)",
    )
    p.add_argument(
        "--unfinished-reward",
        type=number,
        help="reward of an unfinished rollout (default: none, not passing)",
    )
    p.add_argument(
        "--seed", type=int, help="derives each request's seed (one per task, sample and turn)"
    )
    p.add_argument(
        "--out",
        help="output directory for results.jsonl, run.json, summary.json and report.md "
        "(default: none, nothing is written); its directory must exist unless it is inside "
        "the working directory",
    )
    p.add_argument("--resume", action="store_true", help="continue the run in --out, or start it")
    p.add_argument(
        "--min-coverage", type=in_range(0.0, 1.0), help="exit 1 when coverage is lower (0 to 1)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--upload-run",
        metavar="NAME",
        help="also upload every rollout to OpenReward's runs UI under this run name "
        "(OPENREWARD_API_KEY; OPENREWARD_API_URL for another API); never slows the run",
    )
    p.add_argument(
        "--upload-stage",
        choices=("pretrained", "sft", "rl"),
        default="pretrained",
        help="the training stage the uploaded rollouts are filed under (default pretrained)",
    )
    return p


def environment_options(p: Parser) -> None:
    base_url = "the package's, else OPENREWARD_SESSION_URL"
    _environment_options(p, base_url=base_url, several=True)
    p.add_argument("--env-class", help="the adapter class, when the package has several")

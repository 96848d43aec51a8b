"""Fetch a legs group's shared legs once and publish them for the group's arm Jobs.

    python -m jobs.legs --state STATE --store DIR|s3://BUCKET/PREFIX --sweep-id ID --arm-json '[{...}, ...]' --legs KEY

Environment twins: RAGSWEEP_STATE, RAGSWEEP_STORE, RAGSWEEP_SWEEP_ID, RAGSWEEP_ARM, RAGSWEEP_LEGS,
RAGSWEEP_S3_ENDPOINT, RAGSWEEP_BACKEND, RAGSWEEP_EMBEDDING_BACKEND (how a legs Job's spec passes
them). The arms must share one embedded text and scope (harness.sweep.legs); the legs are fetched at
the deepest of their fusion windows and written to KEY as legs.json, naming the state, the query
encoder and the key they are true of, which every arm that reads them checks (and cuts them at its
own window). Exits with the error's code when they cannot be fetched; the launcher then
fails the group's arms, naming why.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.commands.settings import settings
from harness.errors import UsageError
from jobs import entrypoint
from jobs.entry import group_flags, parse_arms, require


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    env = settings()
    p = argparse.ArgumentParser(prog="python -m jobs.legs", description=__doc__.split("\n\n")[0])
    group_flags(p, env, "the group's arm specs, a JSON list", "the store key to write legs.json to")
    args = p.parse_args(argv)
    require(p, args, ("state", "store", "sweep_id", "arm_json", "legs"))
    return args


def run(args: argparse.Namespace) -> int:
    from harness.bench.config import BenchConfig, legs_key
    from harness.bench.group import GroupRun, fetch_legs
    from harness.bench.stages import STAGES
    from harness.index.embed import DEFAULT_EMBEDDING_MODEL, SentenceTransformerEmbedder
    from harness.state import State
    from harness.sweep.executor import legs_identity, open_store
    from harness.sweep.legs import arm_legs_key, group_legs_key, publish_legs

    arms = parse_arms(args.arm_json)
    if args.backend != "embedded":
        raise UsageError(f"jobs.legs: legs are shared on the embedded backend only, not {args.backend}")
    try:
        key = group_legs_key(arms, args.backend)
    except UsageError as e:
        raise UsageError(f"jobs.legs: the arms {', '.join(a.name for a in arms)} share no legs ({e})") from e
    # The legs depend on the key alone, not on an arm's fusion or reranker: fetch them as the default
    # fusion at the group's depth, the deepest of its arms' windows, which every arm cuts at its own
    # (a pooled stage without the cross-encoder where the arms are pooled).
    first = arms[0].arm_config
    neutral = first.model_copy(update={
        "fusion": None, "rank_constant": None, "normalization_technique": None, "combination_technique": None,
        "combination_weights": None, "stage": "diversify" if STAGES[first.stage].pooled else "retrieve"})
    config = BenchConfig(arm=neutral, control_name=f"legs-{arms[0].name}", backend=args.backend)
    assert legs_key(neutral) == arm_legs_key(arms[0])
    state = State.open(args.state)
    embedder = SentenceTransformerEmbedder(DEFAULT_EMBEDDING_MODEL, backend=args.embedding_backend,
                                           onnx_dir=Path(settings().onnx_cache))
    group = GroupRun.open(state, config, embedder, key=key)
    identity = legs_identity(args.state, args.backend)
    table = fetch_legs(group.context, config, {"state": identity, "embedder": embedder.identity,
                                               "arms": [a.name for a in arms]}, key=key)
    # the query vectors too: an arm Job reading this table loads no model and encodes nothing
    table = table.with_vectors([q.text for q in group.context.judged], group.context.vectors)
    publish_legs(open_store(args.store, args.s3_endpoint), args.legs, table)
    print(f"legs of {', '.join(a.name for a in arms)}: {len(table.rows)} queries published to {args.legs}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return entrypoint("jobs.legs", _main, argv)


def _main(argv: Sequence[str] | None) -> int:
    return run(parse(argv))


if __name__ == "__main__":
    sys.exit(main())

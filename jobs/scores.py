"""Score a group's cross-encoder pairs, one part of its queries, and publish them for its rerank arm Jobs.

    python -m jobs.scores --state STATE --store DIR|s3://BUCKET/PREFIX --sweep-id ID --arm-json '[{...}, ...]' \\
        --legs KEY --reranker DIR --scores KEY --part K/P

Environment twins: RAGSWEEP_STATE, RAGSWEEP_STORE, RAGSWEEP_SWEEP_ID, RAGSWEEP_ARM, RAGSWEEP_LEGS,
RAGSWEEP_RERANKER, RAGSWEEP_RERANK_DEVICE, RAGSWEEP_RERANK_BACKEND, RAGSWEEP_SCORES, RAGSWEEP_SCORES_PART,
RAGSWEEP_S3_ENDPOINT, RAGSWEEP_BACKEND, RAGSWEEP_EMBEDDING_BACKEND (how a scores Job's spec passes them).
The arms are the group's pending rerank arms, over the legs its legs Job published (KEY: read, never
fetched). Every pair any of them asks the cross-encoder for, over the K-th of P parts of the judged
queries, is scored once, one pair a forward pass, and written to the store at --scores
(harness.sweep.scores), naming the scorer's key, which every arm that reads them checks. Exits with
the error's code when they cannot be scored; the launcher then fails the group's rerank arms, naming why.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from harness.commands.settings import settings
from harness.errors import UsageError
from jobs import entrypoint
from jobs.entry import bench_config, group_flags, open_group, parse_arms, part, require, reranker_flags


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    env = settings()
    p = argparse.ArgumentParser(prog="python -m jobs.scores", description=__doc__.split("\n\n")[0])
    group_flags(p, env, "the group's rerank arm specs, a JSON list",
                "store key of the group's published legs.json: the candidates are cut from it, never fetched")
    reranker_flags(p, env)
    p.add_argument("--scores", default=env.scores, help="the store key to write this part's scores to")
    p.add_argument("--part", type=part, default=env.scores_part, metavar="K/P",
                   help="score the K-th of P parts of the judged queries (RAGSWEEP_SCORES_PART; default 1/1)")
    args = p.parse_args(argv)
    require(p, args, ("state", "store", "sweep_id", "arm_json", "legs", "reranker", "scores"))
    if "," in args.scores:
        p.error(f"--scores {args.scores!r}: one store key, this part's")
    return args


def run(args: argparse.Namespace) -> int:
    from harness.sweep.executor import open_store
    from harness.sweep.scores import publish_scores

    arms = parse_arms(args.arm_json)
    if not arms:
        raise UsageError("jobs.scores: --arm-json names no arm")
    others = [a.name for a in arms if not a.needs_reranker]
    if others:
        raise UsageError(f"jobs.scores: {', '.join(others)} call no cross-encoder; pass the group's rerank arms")
    store = open_store(args.store, args.s3_endpoint)
    configs = [bench_config(args, arm) for arm in arms]
    # the scores are kept in this process's memory: its pod's scratch volume is gone when it ends
    group = open_group(args, store, configs, rerank_cache=None)
    group.part = args.part
    t0 = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if done % 100 == 0 or done == total:
            print(f"scores: {done}/{total} queries in {time.perf_counter() - t0:.1f}s", flush=True)

    done = group.prescore(configs, progress, own_part=True)
    scorer = group.context.reranker(args.reranker)
    k, parts = args.part
    n = len(group.context.judged)
    doc = publish_scores(store, args.scores, scorer=scorer.key(), legs=args.legs, arms=[a.name for a in arms],
                         part=args.part, queries=(k * n // parts, (k + 1) * n // parts), scores=scorer.pairs())
    print(f"scores of {', '.join(a.name for a in arms)}, part {doc.part} (queries {doc.queries[0]}-"
          f"{doc.queries[1] - 1} of {n}): {doc.pairs} pairs ({done['scored']} scored) in {done['seconds']}s, "
          f"published to {args.scores}", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return entrypoint("jobs.scores", _main, argv)


def _main(argv: Sequence[str] | None) -> int:
    return run(parse(argv))


if __name__ == "__main__":
    sys.exit(main())

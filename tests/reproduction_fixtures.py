"""Small real results files for the reproduction page: sweeps collected by the real collector, bench runs.

Every query of a corpus gets the same control value and every arm adds one delta per corpus to
every query, so each row's mean and each delta is the number written here, by hand:

    control  qmsum      q1 q2 lookup, q3 q4 summarize   nDCG@10 0.0983 (nDCG@5 half of it)
             synthetic  s1 s2 lookup, s3 s4 multi_file  nDCG@10 0.2952

The fusion, budget and pool deltas are the methodology's own per-arm table (its lines 926-946),
except that norm-minmax-geom and -harm lose only 0.0100 / 0.0120 on synthetic (they do not
collapse here), so the sign counts and the pool and budget coefficients must come out as the
methodology's, and the geometric/harmonic cells must differ and be explained.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from harness.report.files import dumps
from harness.sweep.catalogue import CATALOGUE, Arm, config_hash
from harness.sweep.collect import Settings, collect
from harness.sweep.storage import LocalFolderStore, publish_arm

STATE = "state-1"
FAST = Settings(permutations=200, resamples=200, seed=7)
QUERIES = {"q1": ("qmsum", "lookup"), "q2": ("qmsum", "lookup"), "q3": ("qmsum", "summarize"),
           "q4": ("qmsum", "summarize"), "s1": ("synthetic", "lookup"), "s2": ("synthetic", "lookup"),
           "s3": ("synthetic", "multi_file"), "s4": ("synthetic", "multi_file")}
CONTROL = {"qmsum": 0.0983, "synthetic": 0.2952}
# arm -> (qmsum delta, synthetic delta)
DELTAS: dict[str, tuple[float, float]] = {
    "rrf-30-explicit": (0.0, 0.0), "rrf-60": (-0.0003, 0.0063), "norm-minmax-arith": (0.0008, -0.0555),
    "norm-l2-arith": (0.0010, -0.0633), "norm-zscore-arith": (0.0015, -0.0687),
    "norm-minmax-geom": (-0.0152, -0.0100), "norm-minmax-harm": (-0.0161, -0.0120),
    "norm-minmax-arith-w70-30": (0.0014, -0.1450), "norm-minmax-arith-w30-70": (-0.0093, -0.0082),
    "budget-48-12-4-repeat": (0.0, 0.0), "budget-48-20-4": (0.0, 0.0), "budget-48-08-4": (-0.0013, -0.0028),
    "budget-48-12-2": (0.0, 0.0), "budget-48-12-8": (0.0, 0.0), "budget-24-12-4": (0.0009, 0.0095),
    "budget-96-12-4": (0.0004, 0.0091), "budget-96-12-4-pairs96": (0.0007, 0.0057),
    "pool-12": (0.0128, 0.0342), "pool-24": (0.0036, 0.0095), "pool-32": (0.0013, 0.0170),
    "pool-96": (-0.0009, 0.0091),
    "retrieve-48": (0.0041, 0.0), "diversity-only": (-0.0100, -0.0300), "rerank-48-12-4": (-0.0194, -0.0780),
    # the bare body against the header control: the methodology's Stage 3 deltas (header minus body), negated
    "embed-body": (-0.0181, -0.0210),
}
# What a trained reranker's metrics.json records (harness.retrieval.rerank.reranker_provenance).
RERANKER = {"kind": "trained", "weights_sha256": "ab" * 32, "base": "all-MiniLM-L6-v2@sha256:53aa51172d142c89",
            "seed": 7, "training_corpus": {"name": "synthetic", "version": "otsynth-v1+gen1.0.0", "seed": 424242},
            "training_pairs": 4000, "steps": 300, "device": "cpu"}


def measures(v: float) -> dict[str, float]:
    return {"nDCG@5": v / 2, "nDCG@10": v, "nDCG@20": v, "R@5": v, "R@10": v, "R@20": v, "MRR": v,
            "fileR@1": v, "fileR@10": v, "fileRank": 1.0}


def corpus_block(name: str, ids: list[str]) -> dict[str, Any]:
    by_class: dict[str, int] = defaultdict(int)
    for qid in ids:
        by_class[QUERIES[qid][1]] += 1
    domains = {"Academic": 1, "Committee": 1, "Product": 2} if name == "qmsum" else {"Platform": 4}
    return {"name": name, "version": "qmsum@83d7768" if name == "qmsum" else "otsynth-v1+gen1.0.0",
            "tier": "A", "licence": "MIT", "seed": None, "artefacts": 4, "artefacts_sha256": "abc",
            "composition": {"files": 4, "turns": 40, "words": 400, "files_with_real_timings": 0, "files_dated": 0,
                            "domains": domains, "source_ids": ["a", "b", "c", "d"]},
            "queries": {"by_class": dict(sorted(by_class.items())), "rank_scored": len(ids),
                        "dropped_unjudgeable": 0, "dropped_by_adapter": {}}}


def metrics_doc(values: dict[str, float], retrieval: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metrics.json, per_query.json) for per-query nDCG@10 ``values``."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for qid in sorted(values):
        corpus, query_class = QUERIES[qid]
        groups[(corpus, query_class)].append(qid)
        groups[(corpus, "all")].append(qid)
    rows = [{"corpus": c, "tier": "A", "query_class": k, "n": len(ids),
             "metrics": measures(sum(values[q] for q in ids) / len(ids))} for (c, k), ids in sorted(groups.items())]
    corpora = sorted({QUERIES[q][0] for q in values})
    metrics = {
        "schema": "ragsweep.metrics/1", "control_name": "x",
        "corpora": [corpus_block(c, [q for q in sorted(values) if QUERIES[q][0] == c]) for c in corpora],
        "index": {"_meta": {"version": 1}, "backend": {"name": "embedded"}, "documents": 90, "chunk_documents": 80,
                  "digest_documents": 10, "files": 8, "embedding_dimension": 384, "embedding_text": "header",
                  "embedding_verdict": "uniform"},
        "queries": {"scored": len(values), "dropped_unjudgeable": 0, "dropped_unjudgeable_ids": [],
                    "unanswered": 0, "judged_documents": 24},
        "relevance_policy": {"high": 0.5, "low": 0.0, "binary": False},
        "chunking": {"max_words": 200}, "metric_engine": {"name": "pytrec_eval_terrier", "version": "0.5.10"},
        "retrieval": retrieval, "rows": rows,
    }
    per_query = {"schema": "ragsweep.per_query/1", "measures": list(measures(0.0)),
                 "queries": {q: {"corpus": QUERIES[q][0], "query_class": QUERIES[q][1], "measures": measures(v)}
                             for q, v in sorted(values.items())}}
    return metrics, per_query


def arm_values(name: str, corpora: tuple[str, ...]) -> dict[str, float]:
    dq, ds = DELTAS.get(name, (0.0, 0.0))
    return {q: round(CONTROL[c] + (dq if c == "qmsum" else ds), 10) for q, (c, _) in QUERIES.items() if c in corpora}


def publish_sweep(root: Path, sweep_id: str, families: tuple[str, ...],
                  corpora: tuple[str, ...] = ("qmsum", "synthetic"), state: str = STATE) -> LocalFolderStore:
    store = LocalFolderStore(root)
    arms: list[Arm] = []
    for family in families:
        for arm in CATALOGUE.family(family).arms:
            retrieval: dict[str, Any] = {"stage": arm.stage, "scope": "corpus",
                                         "embedding_text": arm.resolved_config()["embedding_text"]}
            if arm.needs_reranker:
                retrieval["reranker"] = RERANKER
            metrics, per_query = metrics_doc(arm_values(arm.name, corpora), retrieval)
            files = {"metrics.json": dumps(metrics), "metrics.md": "# x\n", "per_query.json": dumps(per_query),
                     "runinfo.json": dumps({"elapsed_seconds": 1.0})}
            publish_arm(store, sweep_id, arm, config_hash(arm, state), files, state_identity=state)
            arms.append(arm)
    collect(store, sweep_id, arms, state_identity=state, settings=FAST, plot=False)
    return store


def write_bench_run(folder: Path, scope: str, value: float, *, qmsum_only: bool = False,
                    embedding_text: str = "header") -> Path:
    """A stage-1 run scoring QMSum: on the default state (its index holds 8 files, 4 of them QMSum's),
    or, ``qmsum_only``, on a state holding exactly the 4 QMSum files."""
    metrics, per_query = metrics_doc({q: value for q in ("q1", "q2", "q3", "q4")},
                                     {"stage": "retrieve", "scope": scope, "size": 48, "backend": "embedded",
                                      "embedding_text": embedding_text})
    metrics["index"].update(files=4 if qmsum_only else 8, embedding_text=embedding_text)
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(dumps(metrics), encoding="utf-8")
    (folder / "per_query.json").write_text(dumps(per_query), encoding="utf-8")
    return folder / "metrics.json"


def write_self_report(bench: Path) -> Path:
    """A QMSum self-report as ``ragsweep corpus report qmsum --json`` prints it, three domains."""
    def group(meetings: int, r_at_1: float, median: float, near: float) -> dict[str, Any]:
        return {"meetings": meetings, "other_meetings": meetings - 1, "queries": 2, "r_at_1": r_at_1,
                "median_gold_rank": median, "mean_others_within_90pct": near,
                "per_query": {"q1": {"rank": 1, "others_within_90pct": 0}}}

    doc = {"method": {"library": "bm25s", "library_version": "0.2", "method": "lucene", "k1": 1.2, "b": 0.75},
           "pooled": group(10, 0.5, 2.0, 3.0),
           "by_domain": {"Academic": group(3, 0.300, 4.0, 22.1), "Committee": group(3, 0.664, 1.0, 2.2),
                         "Product": group(4, 0.124, 22.0, 49.2)},
           "skipped": {}}
    bench.mkdir(parents=True, exist_ok=True)
    (bench / "qmsum-bm25.json").write_text(dumps(doc), encoding="utf-8")
    return bench / "qmsum-bm25.json"

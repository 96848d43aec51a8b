"""The trec_eval engine (pytrec_eval_terrier), with trec_eval -c semantics.

pytrec_eval returns results only for queries the run answered, so a plain mean over
its output is a mean over *returned* queries: a run that returns nothing for its hardest
query scores higher than one that returns something wrong. Here every query in the
qrels is scored; a query the run did not answer (absent or empty) scores 0 on every
measure, exactly as ``trec_eval -c``. Queries in the run but not in the qrels are
ignored, as trec_eval ignores them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from harness.errors import UsageError
from harness.metrics.measures import MEASURES, RETRIEVAL_MEASURES, trec_measure_set
from harness.metrics.normalise import to_trec_dict
from harness.model import Qrels, Run

ENGINE_DISTRIBUTION = "pytrec-eval-terrier"


def _pytrec_eval() -> Any:
    try:
        return importlib.import_module("pytrec_eval")
    except ImportError as e:
        raise UsageError(
            "the metric engine is not installed: pip install 'ragsweep[eval]' (pytrec-eval-terrier)"
        ) from e


def engine_info() -> dict[str, str]:
    try:
        version = metadata.version(ENGINE_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        version = "not installed"
    return {
        "name": "pytrec_eval_terrier",
        "version": version,
        "wraps": "NIST trec_eval",
        "semantics": "trec_eval -c: every judged query scored; unanswered queries score 0",
        "ndcg": "ndcg_cut (ideal truncated at k), linear gain",
    }


@dataclass(frozen=True)
class Evaluation:
    per_query: dict[str, dict[str, float]]
    unanswered: tuple[str, ...]
    measures: tuple[str, ...]


def evaluate(qrels: Qrels, run: Run, measures: tuple[str, ...] = RETRIEVAL_MEASURES) -> Evaluation:
    """Score a (normalised) run against qrels; every qrels query appears in the result."""
    return evaluate_trec(qrels.judgements, to_trec_dict(run), measures)


def evaluate_trec(judgements: dict[str, dict[str, int]], scores: dict[str, dict[str, float]],
                  measures: tuple[str, ...] = RETRIEVAL_MEASURES) -> Evaluation:
    """:func:`evaluate` on the mappings pytrec_eval takes, ``{qid: {docid: grade}}`` and
    ``{qid: {docid: score}}``, for a run read from a file with no model per document."""
    for name in measures:
        if MEASURES[name].source != "trec_eval":
            raise UsageError(f"{name} is not a trec_eval measure")
    pytrec_eval = _pytrec_eval()
    judged = {qid: docs for qid, docs in judgements.items() if docs}
    trec_run = {qid: docs for qid, docs in scores.items() if qid in judged and docs}
    raw: dict[str, dict[str, float]] = {}
    if trec_run:
        evaluator = pytrec_eval.RelevanceEvaluator(judged, trec_measure_set(measures))
        raw = evaluator.evaluate(trec_run)
    per_query: dict[str, dict[str, float]] = {}
    unanswered: list[str] = []
    for qid in sorted(judged):
        if qid in raw:
            values = raw[qid]
            per_query[qid] = {name: float(values[MEASURES[name].trec_key or ""]) for name in measures}
        else:
            unanswered.append(qid)
            per_query[qid] = dict.fromkeys(measures, 0.0)
    return Evaluation(per_query=per_query, unanswered=tuple(unanswered), measures=measures)


def mean(per_query: dict[str, dict[str, float]], name: str, query_ids: list[str] | None = None) -> float:
    """Mean of one measure over the given queries (all by default); 0 queries -> 0.0."""
    ids = sorted(per_query) if query_ids is None else query_ids
    if not ids:
        return 0.0
    return sum(per_query[q][name] for q in ids) / len(ids)

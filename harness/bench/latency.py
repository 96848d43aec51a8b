"""Latency percentiles and, for ``--time-also``, how often the two backends agreed."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any

from harness.bench.stages import QueryOutcome


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    if not samples_ms:
        return {"samples": 0}
    ordered = sorted(samples_ms)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]

    return {"samples": len(ordered), "p50": pct(50), "p95": pct(95), "p99": pct(99), "max": ordered[-1],
            "mean": statistics.fmean(ordered)}


def ranking_agreement(outcomes: Mapping[str, QueryOutcome], backend: str, other: str) -> dict[str, Any]:
    """How often the paired backend returned the very same ranked list (ids, in order)."""
    same = top10 = 0
    differing: list[str] = []
    for qid in sorted(outcomes):
        mine = [h.doc_id for h in outcomes[qid].hits]
        pair = outcomes[qid].paired
        theirs = pair[0] if pair is not None else []
        same += mine == theirs
        top10 += mine[:10] == theirs[:10]
        if mine != theirs:
            differing.append(qid)
    return {"backends": [backend, other], "queries": len(outcomes), "identical_ranked_lists": same,
            "identical_top10": top10, "differing_queries": differing[:20]}

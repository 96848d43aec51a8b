"""Fuse a BM25 leg and a vector leg the way OpenSearch's hybrid search pipelines do.

The workflow (NormalizationProcessorWorkflow -> ScoreNormalizer -> ScoreCombiner):

1. normalize each sub-query's hits on its own (min_max / l2 / z_score, or RRF's
   reciprocal rank);
2. for every document any leg returned, build one score per leg, ``0.0`` where the leg
   did not return it (ScoreCombiner allocates ``new float[n]``, and Java zero-fills);
3. combine those scores with the technique, weights in sub-query order (BM25 first);
4. sort by combined score, highest first (see ``fused_order`` for ties).

Every document either leg returned comes back: the engine keeps up to the shard's total
hit count, the union. Cutting to ``--size`` is the caller's job.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from harness.retrieval.fusion import rrf
from harness.retrieval.fusion.base import (
    ZERO,
    Combiner,
    Fused,
    Leg,
    Normalizer,
    ScoredLeg,
    check_leg,
    f32,
    fused_order,
)
from harness.retrieval.fusion.config import FusionConfig
from harness.retrieval.fusion.registry import COMBINATION_TECHNIQUES, NORMALIZATION_TECHNIQUES

Techniques = tuple[Normalizer, Combiner]


def _rrf(config: FusionConfig) -> Techniques:
    assert config.rank_constant is not None  # FusionConfig fills it for rrf
    return partial(rrf.normalize, rank_constant=config.rank_constant), rrf.combine


def _normalization(config: FusionConfig) -> Techniques:
    assert config.normalization_technique is not None and config.combination_technique is not None
    return (
        NORMALIZATION_TECHNIQUES[config.normalization_technique],
        COMBINATION_TECHNIQUES[config.combination_technique],
    )


FUSION_METHODS: dict[str, Callable[[FusionConfig], Techniques]] = {
    "rrf": _rrf,
    "normalization": _normalization,
}


def fuse(config: FusionConfig, bm25_leg: Leg, vector_leg: Leg) -> Fused:
    """The fused list ``[(doc_id, score), ...]``, highest first, ties by doc_id.

    Each leg is ``[(doc_id, raw_score), ...]`` best first, as the backend returned it.
    Scores come back as Python floats holding the engine's float32 values exactly.
    """
    return fuse_checked(config, (check_leg(bm25_leg, "bm25"), check_leg(vector_leg, "vector")))


def fuse_checked(config: FusionConfig, legs: tuple[ScoredLeg, ScoredLeg]) -> Fused:
    """:func:`fuse` over legs :func:`check_leg` already returned (a group's arms fuse the same legs: each
    checked once, harness.retrieval.chunks)."""
    normalize, combine = FUSION_METHODS[config.method](config)
    per_doc: dict[str, list[np.float32]] = {}
    for index, leg in enumerate(legs):
        for doc_id, score in normalize(leg):
            per_doc.setdefault(doc_id, [ZERO] * len(legs))[index] = score
    weights = None if config.weights is None else tuple(f32(w) for w in config.weights)
    return fused_order({doc_id: combine(scores, weights) for doc_id, scores in per_doc.items()})

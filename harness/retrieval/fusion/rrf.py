"""Reciprocal rank fusion, as neural-search 2.19's score-ranker-processor.

Normalization (RRFNormalizationTechnique): the hit at 0-based position ``p`` of a leg
scores ``1 / (rank_constant + p + 1)``, computed as a BigDecimal rounded to 10 decimal
places HALF_UP and then converted to float. Rank is position, not score: two hits with
equal raw scores get consecutive ranks, in the order the leg lists them (the engine's
order is score desc, then Lucene doc id asc). ``rank_constant`` is an integer in
``[1, 10000]``; the engine's default is 60, this deployment's configured constant is 30.

Combination (RRFScoreCombinationTechnique): the plain float sum of the per-leg scores, an
absent leg adding 0.0. So a one-leg hit scores ``1 / (k + rank)`` and a hit at rank 1 in
both legs ``2 / (k + 1)``. 2.19 takes no weights for RRF (weighted RRF arrived in 3.1; a
2.19 pipeline carrying ``weights`` is refused at creation), so neither does this.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache

import numpy as np

from harness.retrieval.fusion.base import ZERO, ScoredLeg, fraction_to_f32

MIN_RANK_CONSTANT = 1
MAX_RANK_CONSTANT = 10_000
ENGINE_DEFAULT_RANK_CONSTANT = 60
_DECIMAL_PLACES = 10


@lru_cache(maxsize=8192)
def reciprocal_rank_score(rank_constant: int, rank: int) -> np.float32:
    """``1 / (rank_constant + rank)`` (rank 1-based), rounded to 10 places HALF_UP, as a float."""
    if not MIN_RANK_CONSTANT <= rank_constant <= MAX_RANK_CONSTANT:
        raise ValueError(
            f"rank constant must be in the interval between {MIN_RANK_CONSTANT} and "
            f"{MAX_RANK_CONSTANT}, got {rank_constant}"
        )
    if rank < 1:
        raise ValueError(f"rank is 1-based, got {rank}")
    denominator = rank_constant + rank
    scale = 10**_DECIMAL_PLACES
    quotient, remainder = divmod(scale, denominator)
    if 2 * remainder >= denominator:  # HALF_UP
        quotient += 1
    return fraction_to_f32(Fraction(quotient, scale))


def normalize(leg: ScoredLeg, rank_constant: int) -> ScoredLeg:
    return [(doc_id, reciprocal_rank_score(rank_constant, rank)) for rank, (doc_id, _) in enumerate(leg, 1)]


def combine(scores: Sequence[np.float32], weights: Sequence[np.float32] | None = None) -> np.float32:
    if weights is not None:
        raise ValueError("RRF in OpenSearch 2.19 takes no weights")
    total = ZERO
    for score in scores:
        total = total + score
    return total

"""min_max normalization, as neural-search's MinMaxScoreNormalizationTechnique (2.19.x).

Per sub-query: ``n = (score - min) / (max - min)`` in float, over the hits the sub-query
returned (on our single shard, its leg). Two edge rules from the source:

* if ``max == min`` and the score equals them (a one-hit leg, or a leg whose hits all
  score the same) the normalized score is ``1.0``;
* a normalized score of exactly ``0.0`` (the leg's lowest hit) becomes ``0.001``
  (``MIN_SCORE``), so a hit at the bottom of a leg is told apart from a document the leg
  did not return, which the combiner sees as ``0.0``.

2.19 has no ``lower_bounds`` (that arrived in 3.0); 3.x without ``lower_bounds`` computes
exactly this.
"""

from __future__ import annotations

import numpy as np

from harness.retrieval.fusion.base import ScoredLeg

MIN_SCORE = np.float32(0.001)
SINGLE_RESULT_SCORE = np.float32(1.0)


def normalize_score(score: np.float32, lowest: np.float32, highest: np.float32) -> np.float32:
    if highest == lowest and highest == score:
        return SINGLE_RESULT_SCORE
    normalized = (score - lowest) / (highest - lowest)
    return MIN_SCORE if normalized == 0.0 else normalized


def normalize(leg: ScoredLeg) -> ScoredLeg:
    if not leg:
        return []
    lowest = min(score for _, score in leg)
    highest = max(score for _, score in leg)
    return [(doc_id, normalize_score(score, lowest, highest)) for doc_id, score in leg]

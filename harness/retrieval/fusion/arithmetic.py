"""arithmetic_mean combination, as neural-search's ArithmeticMeanScoreCombinationTechnique.

``sum(w_i * s_i) / sum(w_i)`` in float over the legs with ``s_i >= 0.0``. A leg that did
not return the document contributes ``0.0`` (ScoreCombiner fills absent slots with
0.0), and ``0.0 >= 0.0``: the absent leg is *counted*, its weight stays in the
denominator. A one-leg hit therefore scores ``w_i * s_i / (w_1 + w_2)``: half its
normalized score unweighted, ``w_i * s_i`` with weights summing to 1. Only negative
scores are skipped, and no 2.19 normalization produces one. ``0.0`` if no leg counted.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.retrieval.fusion.base import ZERO, check_weights, weight_for


def combine(scores: Sequence[np.float32], weights: Sequence[np.float32] | None) -> np.float32:
    check_weights(scores, weights)
    combined = ZERO
    sum_of_weights = ZERO
    for index, score in enumerate(scores):
        if score >= 0.0:
            weight = weight_for(weights, index)
            combined = combined + score * weight
            sum_of_weights = sum_of_weights + weight
    if sum_of_weights == 0.0:
        return ZERO
    return combined / sum_of_weights

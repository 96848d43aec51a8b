"""harmonic_mean combination, as neural-search's HarmonicMeanScoreCombinationTechnique.

``sum(w_i) / sum(w_i / s_i)`` in float over the legs with ``s_i > 0`` only; a score
``<= 0`` is skipped, weight and all. A one-leg hit keeps its own normalized score:
``w / (w / s) = s`` whatever the weights. ``0.0`` when the harmonic sum is not > 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.retrieval.fusion.base import ZERO, check_weights, weight_for


def combine(scores: Sequence[np.float32], weights: Sequence[np.float32] | None) -> np.float32:
    check_weights(scores, weights)
    sum_of_weights = ZERO
    sum_of_harmonics = ZERO
    for index, score in enumerate(scores):
        if score <= 0:
            continue
        weight = weight_for(weights, index)
        sum_of_weights = sum_of_weights + weight
        sum_of_harmonics = sum_of_harmonics + weight / score
    return sum_of_weights / sum_of_harmonics if sum_of_harmonics > 0 else ZERO
